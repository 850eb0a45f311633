//! In-place updates, decided from the schedule alone: which nodes write
//! one of their inputs in place (registry fact `ops::Update`), and for the
//! conditional ones (SGD's `w_updated` over `w`) whether that is safe —
//! only when no later node reads the input and the sizes agree.

use std::collections::HashMap;

use petgraph::stable_graph::NodeIndex;

use crate::ir::{Graph, Readers, TensorId};
use crate::ops::{self, Update};

/// The in-place writes of one graph.
#[derive(Clone, Debug, Default)]
pub struct InPlace {
    /// (tensor written in place, schedule position of the writer).
    pub writes: Vec<(TensorId, usize)>,
    /// For each conditional updater: whether its output shares the input.
    pub shared: HashMap<NodeIndex, bool>,
    /// Refusals worth telling a person.
    pub notes: Vec<String>,
}

/// Find every in-place write of a scheduled graph, whose readers
/// ([`Graph::readers`]) are given.
pub fn in_place(g: &Graph, readers: &Readers) -> InPlace {
    let pos: HashMap<NodeIndex, usize> = g.schedule.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let mut r = InPlace::default();
    for (i, (ni, n)) in g.nodes().enumerate() {
        let state = (0..n.inputs.len()).filter(|&s| ops::of(n).updates_state(s));
        r.writes.extend(state.filter_map(|s| n.input(s)).map(|t| (t, i)));
        match ops::of(n).update {
            Update::Always { input, .. } => r.writes.extend(n.input(input).map(|t| (t, i))),
            Update::WhenLastReader { input, output } => {
                let Some(w) = n.input(input) else { continue };
                let later: Vec<String> =
                    readers[&w].iter().filter(|&&c| c != ni && pos[&c] > i).map(|&c| g.display_node(c)).collect();
                let same_size = n.output(output).is_some_and(|o| g.tensor(o).ty.bytes() == g.tensor(w).ty.bytes());
                let ok = later.is_empty() && same_size;
                if !later.is_empty() {
                    r.notes.push(format!(
                        "{} '{}' does not update '{}' in place: {} read(s) it later; '{}' gets its own buffer",
                        n.op,
                        n.name,
                        g.name_of(w),
                        later.join(", "),
                        n.output(output).map_or("?", |o| g.name_of(o))
                    ));
                }
                r.shared.insert(ni, ok);
                if ok {
                    r.writes.push((w, i));
                }
            }
            Update::None | Update::Sequence => {}
        }
    }
    r
}
