//! Positional keys (`arr_0`, `arr_1`, … in the order of the graph inputs)
//! against the inputs their positions land on: a skipped run of inputs is
//! re-seated and recorded as missing, a permutation is an error naming the
//! slots, and a `--num-data-inputs` that contradicts detection gets a
//! message saying what the harness's slot arithmetic would pair.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::data::{fits_data, ty_str, Input};
use super::{quoted, Missing, Npz};
use crate::error::{Error, Result};
use crate::ir::Role;

/// Check the positional base keys against the inputs their positions land
/// on. A permutation among them is an error naming the slots; a run of
/// inputs skipped (every later array fits the input `k` positions further
/// on) is recorded as missing inputs with their arrays re-seated, so the
/// check stage can classify what is missing. Anything else is an error
/// listing every mismatched slot.
pub(super) fn realign_positional(
    inputs: &Npz,
    graph_inputs: &[Input],
    by_position: &[usize],
    at: &mut BTreeMap<(usize, usize), &str>,
    missing: &mut Vec<Missing>,
) -> Result<()> {
    let key_at = |p: usize| format!("arr_{p:04}");
    let array = |p: usize| inputs.header(&key_at(p));
    let fits_at = |p: usize, q: usize| match (array(p), by_position.get(q)) {
        (Some(t), Some(&i)) => fits_data(&graph_inputs[i].ty, t),
        _ => false,
    };
    let mismatched: Vec<usize> = (0..by_position.len()).filter(|&p| array(p).is_some() && !fits_at(p, p)).collect();
    if mismatched.is_empty() {
        return Ok(());
    }
    let input_at = |p: usize| &graph_inputs[by_position[p]];
    let describe = |p: usize| {
        let x = input_at(p);
        let t = array(p).expect("mismatched slots have arrays");
        format!(
            "slot {p} ('{}') lands on graph input '{}' ({}): expected {}, found {}",
            key_at(p),
            x.name,
            x.role.name(),
            x.ty,
            ty_str(t.dtype, &t.shape)
        )
    };

    // Swapped: every mismatched array fits another mismatched slot's input.
    let partner = |p: usize| mismatched.iter().copied().find(|&q| q != p && fits_at(p, q));
    if mismatched.iter().all(|&p| partner(p).is_some()) {
        let mut lines = vec![];
        let mut seen = vec![];
        for &p in &mismatched {
            let q = partner(p).expect("checked");
            if seen.contains(&p) {
                continue;
            }
            let swapped_back = partner(q) == Some(p);
            if swapped_back {
                seen.extend([p, q]);
                lines.push(format!(
                    "  slots {p} and {q} are swapped: '{}' holds '{}' ({}) and '{}' holds '{}' ({})",
                    key_at(p),
                    input_at(q).name,
                    input_at(q).ty,
                    key_at(q),
                    input_at(p).name,
                    input_at(p).ty
                ));
            } else {
                seen.push(p);
                lines.push(format!("  '{}' holds what fits slot {q} ('{}')", key_at(p), input_at(q).name));
            }
        }
        let details: Vec<String> = mismatched.iter().map(|&p| format!("  {}", describe(p))).collect();
        return Err(Error::binding(format!(
            "{}: positional slots do not match the graph inputs they land on:\n{}\n{}",
            inputs.path.display(),
            details.join("\n"),
            lines.join("\n")
        )));
    }

    // Skipped: from the first mismatch on, every array fits the input k
    // positions further on.
    let s = mismatched[0];
    let present: Vec<usize> = (s..by_position.len()).filter(|&p| array(p).is_some()).collect();
    for k in 1..=4usize {
        if present.iter().all(|&p| fits_at(p, p + k)) {
            let skipped: Vec<usize> = (s..(s + k).min(by_position.len())).collect();
            // Re-seat every key (all mini-batches) from position p to p + k.
            let moved: Vec<((usize, usize), &str)> =
                at.iter().filter(|(&(i, _), _)| by_position[s..].contains(&i)).map(|(&k2, &v)| (k2, v)).collect();
            for (key, _) in &moved {
                at.remove(key);
            }
            for ((i, mb), v) in moved {
                let p = by_position.iter().position(|&j| j == i).expect("a positional input");
                if let Some(&to) = by_position.get(p + k) {
                    at.insert((to, mb), v);
                }
            }
            let shifted = quoted(present.iter().map(|&p| key_at(p)).collect::<Vec<_>>().iter().map(String::as_str));
            for &p in &skipped {
                let x = input_at(p);
                let holds = match (array(p), by_position.get(p + k)) {
                    (Some(_), Some(&i)) => format!("'{}' holds '{}' instead", key_at(p), graph_inputs[i].name),
                    _ => format!("there is no '{}'", key_at(p)),
                };
                missing.push(Missing {
                    input: x.name.clone(),
                    role: x.role,
                    expected_key: key_at(p),
                    misplaced: Some(format!(
                        "{holds}: the arrays from '{}' on ({shifted}) each fit the graph input {k} position(s) further \
                         on, so the data skipped '{}'",
                        key_at(s),
                        x.name
                    )),
                    hint: None,
                });
            }
            return Ok(());
        }
    }

    let details: Vec<String> = mismatched.iter().map(|&p| format!("  {}", describe(p))).collect();
    Err(Error::binding(format!(
        "{}: positional slots do not match the graph inputs they land on:\n{}",
        inputs.path.display(),
        details.join("\n")
    )))
}

/// The error for a `--num-data-inputs` that contradicts detection: which
/// inputs change per mini-batch, and what the harness's index arithmetic
/// (weight i at slot N + i, gradient buffer i at its own slot) would pair.
#[allow(clippy::too_many_arguments)]
pub(super) fn shift_message(
    n: usize,
    detected: usize,
    stored: usize,
    order: &[usize],
    role: &[Role],
    graph_inputs: &[Input],
    at: &BTreeMap<(usize, usize), &str>,
    buffers: Vec<(String, String)>,
) -> String {
    let data: Vec<usize> = order.iter().copied().filter(|&i| matches!(role[i], Role::Data | Role::Labels)).collect();
    let describe = |i: usize| {
        let keys: Vec<&str> = at.range((i, 0)..(i, 2)).map(|(_, k)| *k).collect();
        format!("'{}' ({}, keys {}, …)", graph_inputs[i].name, role[i].name(), keys.join(", "))
    };
    let mut m = String::new();
    let _ = write!(
        m,
        "num_data_inputs = {n} contradicts the test data: inputs.npz holds {stored} mini-batches and {detected} graph \
         input(s) change per mini-batch: {}. So num_data_inputs is {detected}.",
        data.iter().map(|&i| describe(i)).collect::<Vec<_>>().join(" and ")
    );
    let weights: Vec<usize> = order.iter().copied().filter(|&i| role[i] == Role::Param).collect();
    let moved = &order[n.min(detected)..n.max(detected).min(order.len())];
    for &i in moved {
        let name = &graph_inputs[i].name;
        let _ = if n < detected {
            write!(
                m,
                "\nWith {n}, '{name}' ({}) would be copied in once and never change per mini-batch: every pass would \
                       train on mini-batch 0's value.",
                role[i].name()
            )
        } else {
            write!(m, "\nWith {n}, '{name}' ({}) would be overwritten with per-mini-batch data.", role[i].name())
        };
    }
    if weights.is_empty() || buffers.is_empty() {
        let _ = write!(
            m,
            "\nThe constant slots would start at index {n} instead of {detected}, so every slot after the data would \
             be filled from the wrong array. Drop the flag: the data decides."
        );
        return m;
    }
    let _ = write!(
        m,
        "\nWith {n}, the harness would take weight i from slot {n} + i instead of {detected} + i, shifting every weight \
         {} slot(s) against its gradient buffer:",
        detected.abs_diff(n)
    );
    let mut wrong = 0;
    for (w, (weight, buffer)) in buffers.iter().enumerate() {
        let Some(&slot_input) = order.get(n + w) else { break };
        let name = &graph_inputs[slot_input].name;
        if name == weight {
            continue;
        }
        wrong += 1;
        if wrong <= 4 {
            let _ = write!(
                m,
                "\n  weight {w} would be '{name}' ({}, slot {}), paired with '{buffer}'",
                role[slot_input].name(),
                n + w
            );
        }
    }
    if wrong > 4 {
        let _ =
            write!(m, "\n  … {wrong} of {} weights in all would pair with the wrong gradient buffer", buffers.len());
    }
    let _ = write!(
        m,
        "\nStep 0 would still match the reference (the weights start right); every later step would diverge. Drop the \
         flag: the data decides."
    );
    m
}
