//! Emission: askama templates to a self-contained C project.
