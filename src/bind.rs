//! Binding: test data (`inputs.npz`, `outputs.npz`) to graph inputs by name,
//! mini-batch schedule, number of data inputs.
