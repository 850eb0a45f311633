//! The walk over one graph's schedule: each node's inputs extend the
//! lifetimes of their buffers, and each output is placed — an in-place
//! update, the parameters a sequence update writes, a view of its input,
//! an overwrite of an input no later node reads, or a new buffer.

use super::*;

/// Buffers of every param / gradient buffer, for sequence operands.
fn sequence_members(b: &Builder, role: Role) -> Vec<BufId> {
    let g = &b.model.graph;
    b.model
        .roles
        .params
        .iter()
        .filter_map(|p| match role {
            Role::ParamSequence => Some(p.name.as_str()),
            _ => p.grad_buffer.as_deref(),
        })
        .filter_map(|n| g.id(n).and_then(|t| b.main.get(&t).copied()))
        .collect()
}

/// Walk one graph's schedule in step order: inputs extend their buffers'
/// lifetimes; each output aliases a buffer or gets a new one.
pub(super) fn walk(
    b: &mut Builder<'_>,
    sel: GraphSel,
    base: u32,
    readers: Readers,
    steps: &mut Vec<Step>,
) -> Result<()> {
    let mut w = Walk::new(b, sel, base, readers);
    let g = w.g;
    for (i, (ni, n)) in g.nodes().enumerate() {
        let s = base + i as u32;
        let mut operands: Vec<(BufId, Access)> = vec![];
        w.inputs(b, s, n, &mut operands)?;
        let mut alias_only = false;
        for (slot, t) in n.outputs.iter().enumerate() {
            let Some(t) = *t else { continue };
            if b.map(sel).contains_key(&t) {
                continue;
            }
            if w.place_output(b, s, ni, n, slot, t, &mut operands)? == Placed::View {
                alias_only = true;
            }
        }
        // Later reads extend lifetimes as the walk reaches them.
        steps.push(Step {
            index: s,
            graph: sel,
            node: ni,
            name: if b.detail == Detail::Full { n.name.clone() } else { String::new() },
            op: if b.detail == Detail::Full { n.op.clone() } else { String::new() },
            op_id: n.op_id,
            operands: if alias_only { vec![] } else { operands },
            alias_only,
            scratch_bytes: if alias_only { 0 } else { scratch_bytes(g, n) },
        });
    }
    if w.viewed_seq {
        b.note(|| {
            "the optimizer's sequence inputs are views of the parameter and gradient buffers: SGDOptimizerV2 updates the parameters in place".into()
        });
    }
    Ok(())
}

/// Record that a node touches buffer `id`; a buffer both read and written
/// by the node is read-write.
fn add_operand(ops: &mut Vec<(BufId, Access)>, id: BufId, acc: Access) {
    match ops.iter_mut().find(|(x, _)| *x == id) {
        Some((_, a)) => {
            if *a != acc {
                *a = Access::ReadWrite
            }
        }
        None => ops.push((id, acc)),
    }
}

/// How the walk placed a node's output.
#[derive(PartialEq)]
enum Placed {
    /// In its input's buffer (or the parameters'), written by the node.
    InPlace,
    /// A view of its input's buffer: shape only, no code.
    View,
    /// A buffer of its own.
    New,
}

/// What the walk knows of one graph besides the builder.
struct Walk<'a> {
    g: &'a Graph,
    sel: GraphSel,
    /// The plan's last step: graph outputs live to it.
    last: u32,
    /// Each node's step, by node index.
    step_of: Vec<u32>,
    outputs: HashSet<TensorId>,
    readers: Readers,
    /// In-place writes (buffer-group tensor, step), sorted by step.
    inplace: Vec<(TensorId, u32)>,
    /// Whether each conditional updater shares its input's buffer.
    sgd_inplace: HashMap<NodeIndex, bool>,
    /// Per buffer, the last step any of its tensors is read (kept as tensors
    /// join it, so that an in-place check need not scan every tensor); 0
    /// for a buffer no tensor has joined.
    member_end: Vec<u32>,
    /// Whether some node read the optimizer's sequences as their members.
    viewed_seq: bool,
}

impl<'a> Walk<'a> {
    fn new(b: &mut Builder<'a>, sel: GraphSel, base: u32, readers: Readers) -> Self {
        let g = b.graph(sel);
        let mut step_of = vec![0; g.dag.node_indices().map(|n| n.index() + 1).max().unwrap_or(0)];
        for (i, (n, _)) in g.nodes().enumerate() {
            step_of[n.index()] = base + i as u32;
        }
        let ip = alias::in_place(g, &readers);
        if b.detail == Detail::Full {
            b.notes.extend(ip.notes);
        }
        let mut inplace: Vec<(TensorId, u32)> = ip.writes.iter().map(|&(t, i)| (t, base + i as u32)).collect();
        inplace.sort_by_key(|&(_, step)| step);
        let mut w = Walk {
            g,
            sel,
            last: b.last,
            step_of,
            outputs: g.outputs.iter().copied().collect(),
            readers,
            inplace,
            sgd_inplace: ip.shared,
            member_end: vec![],
            viewed_seq: false,
        };
        let bound: Vec<(TensorId, BufId)> = b.map(sel).iter(g).collect();
        for (t, id) in bound {
            w.joins(id, t);
        }
        w
    }

    fn is_output(&self, t: TensorId) -> bool {
        self.outputs.contains(&t)
    }

    /// Last step that reads a tensor (graph outputs: the end).
    fn last_read(&self, t: TensorId) -> u32 {
        let r = self.readers.get(&t).map_or(0, |cs| cs.iter().map(|c| self.step_of[c.index()]).max().unwrap_or(0));
        if self.is_output(t) {
            self.last
        } else {
            r
        }
    }

    /// Tensor `t` joins buffer `id`: the buffer is read as long as `t` is.
    fn joins(&mut self, id: BufId, t: TensorId) {
        let end = self.last_read(t);
        if self.member_end.len() <= id.index() {
            self.member_end.resize(id.index() + 1, 0);
        }
        let e = &mut self.member_end[id.index()];
        *e = (*e).max(end);
    }

    fn bytes(&self, t: TensorId) -> Option<u64> {
        self.g.tensor(t).ty.bytes().map(|x| x as u64)
    }

    /// Node `n`'s inputs at step `s`: extend lifetimes; sequences expand to
    /// their members.
    fn inputs(&mut self, b: &mut Builder<'_>, s: u32, n: &Node, operands: &mut Vec<(BufId, Access)>) -> Result<()> {
        let (g, sel) = (self.g, self.sel);
        for (slot, t) in n.inputs.iter().enumerate() {
            let Some(t) = *t else { continue };
            if let Some(&id) = b.map(sel).get(&t) {
                b.touch(id, s);
                // An input the operator always updates is written, whether
                // or not the output that names the update is present.
                let acc = match ops::of(n).update {
                    Update::Always { input, .. } if input == slot => Access::ReadWrite,
                    _ if ops::of(n).updates_state(slot) => Access::ReadWrite,
                    _ => Access::Read,
                };
                add_operand(operands, id, acc);
            } else if g.tensor(t).sequence {
                let role = b.model.roles.optimizer.get(g.name_of(t)).copied();
                if let Some(r @ (Role::ParamSequence | Role::GradSequence)) = role {
                    // SGDOptimizerV2 updates the parameters in place.
                    let acc = if r == Role::ParamSequence && ops::of(n).update == Update::Sequence {
                        Access::ReadWrite
                    } else {
                        Access::Read
                    };
                    for id in sequence_members(b, r) {
                        b.touch(id, s);
                        add_operand(operands, id, acc);
                    }
                    self.viewed_seq = true;
                }
            } else if ops::of(n).compile_time_input(slot) && is_constant(g, t) {
                continue;
            } else if is_constant(g, t) {
                // A constant read as data that discovery did not see: give
                // it a buffer now.
                let id = b.persistent(sel, t, Kind::Constant)?;
                self.joins(id, t);
                add_operand(operands, id, Access::Read);
            } else {
                return Err(Error::plan(format!(
                    "node '{}' ({}) reads '{}', which has no buffer: it is neither produced earlier nor a graph input",
                    n.name,
                    n.op,
                    g.name_of(t)
                )));
            }
        }
        Ok(())
    }

    /// Place output `slot` (tensor `t`) of node `n` at step `s`: in its
    /// input's buffer when the operator updates it, views it or may
    /// overwrite it; otherwise in a new buffer.
    #[allow(clippy::too_many_arguments)]
    fn place_output(
        &mut self,
        b: &mut Builder<'_>,
        s: u32,
        ni: NodeIndex,
        n: &Node,
        slot: usize,
        t: TensorId,
        operands: &mut Vec<(BufId, Access)>,
    ) -> Result<Placed> {
        let in0 = n.input(0).and_then(|x| b.map(self.sel).get(&x).copied());
        let def = ops::of(n);
        let shares = match def.update {
            Update::Always { output, .. } => output == slot,
            Update::WhenLastReader { output, .. } => output == slot,
            _ => false,
        };
        // Only the first rule that applies is tried; if it refuses, the
        // output gets a new buffer.
        let placed = match def.update {
            _ if shares && in0.is_some() => self.update_in_place(b, ni, n, t, in0.expect("checked"), operands),
            Update::Sequence if slot >= 1 => {
                // Updated parameters: the parameter buffers, in place.
                for id in sequence_members(b, Role::ParamSequence) {
                    add_operand(operands, id, Access::ReadWrite);
                }
                Some(Placed::InPlace)
            }
            _ if def.view && slot == 0 && in0.is_some() => self.view(b, s, n, t, in0.expect("checked")),
            _ if def.tile.is_some_and(|r| r.in_place) && slot == 0 && in0.is_some() && !self.is_output(t) => {
                self.overwrite(b, s, n, t, in0.expect("checked"), operands)
            }
            _ => None,
        };
        match placed {
            Some(p) => Ok(p),
            None => self.new_buffer(b, s, n, t, operands),
        }
    }

    /// An updater's output in its input's buffer `id`, when the update is
    /// unconditional or shares it, and the sizes match.
    fn update_in_place(
        &mut self,
        b: &mut Builder<'_>,
        ni: NodeIndex,
        n: &Node,
        t: TensorId,
        id: BufId,
        operands: &mut Vec<(BufId, Access)>,
    ) -> Option<Placed> {
        let inplace_ok = matches!(ops::of(n).update, Update::Always { .. }) || self.sgd_inplace.get(&ni) == Some(&true);
        if !(inplace_ok && self.bytes(t) == Some(b.buffers[id].bytes)) {
            return None;
        }
        b.alias(self.sel, t, id, |buf| format!("{} '{}' writes '{}' in place", n.op, n.name, buf.name));
        self.joins(id, t);
        if self.is_output(t) {
            b.touch(id, self.last);
        }
        add_operand(operands, id, Access::ReadWrite);
        Some(Placed::InPlace)
    }

    /// A shape-only node's output as a view of its input's buffer `id`,
    /// unless an in-place write to the buffer falls inside the view's
    /// lifetime (then it is copied, with a note saying why).
    fn view(&mut self, b: &mut Builder<'_>, s: u32, n: &Node, t: TensorId, id: BufId) -> Option<Placed> {
        let (g, sel) = (self.g, self.sel);
        let op = &n.op;
        let x = n.input(0).expect("checked");
        if self.bytes(t) != Some(b.buffers[id].bytes) {
            return None;
        }
        // The writes between the two steps, found by step.
        let end = self.last_read(t);
        let inplace = &self.inplace;
        let window = inplace.partition_point(|&(_, ws)| ws <= s)..inplace.partition_point(|&(_, ws)| ws < end);
        let hazard = inplace.get(window).unwrap_or_default().iter().find(|(w, _)| b.map(sel).get(w) == Some(&id));
        if let Some((w, ws)) = hazard {
            b.note(|| {
                format!(
                    "{op} '{}' copies '{}' instead of viewing it: step {ws} writes '{}' in place while the view is still read",
                    n.name,
                    g.name_of(x),
                    g.name_of(*w)
                )
            });
            return None;
        }
        b.alias(sel, t, id, |_| format!("{op} '{}' views '{}' (shape only, no copy)", n.name, g.name_of(x)));
        self.joins(id, t);
        if self.is_output(t) {
            b.touch(id, self.last);
        }
        Some(Placed::View)
    }

    /// A tile-rule in-place operator's output over its input's buffer `id`,
    /// when that buffer is a transient of this graph that no later node reads.
    fn overwrite(
        &mut self,
        b: &mut Builder<'_>,
        s: u32,
        n: &Node,
        t: TensorId,
        id: BufId,
        operands: &mut Vec<(BufId, Access)>,
    ) -> Option<Placed> {
        let buf = &b.buffers[id];
        let transient = matches!(buf.kind, Kind::Activation | Kind::Gradient) && !buf.persistent;
        // Every tensor of the buffer (views included) is last
        // read here: no later node sees the overwrite.
        let dies = self.member_end.get(id.index()).is_none_or(|&end| end <= s);
        if !(transient && dies && self.bytes(t) == Some(buf.bytes) && b.buffers[id].graph == self.sel) {
            return None;
        }
        b.alias(self.sel, t, id, |buf| {
            format!("{} '{}' overwrites '{}', read by no later node", n.op, n.name, buf.name)
        });
        self.joins(id, t);
        add_operand(operands, id, Access::ReadWrite);
        Some(Placed::InPlace)
    }

    /// A buffer of its own for output `t` of node `n`, from step `s` (graph
    /// outputs: to the end).
    fn new_buffer(
        &mut self,
        b: &mut Builder<'_>,
        s: u32,
        n: &Node,
        t: TensorId,
        operands: &mut Vec<(BufId, Access)>,
    ) -> Result<Placed> {
        let kind = if self.is_output(t) { Kind::Output } else { value_kind(self.g, n, t) };
        let end = if self.is_output(t) { self.last } else { s };
        let id = b.new_buffer(self.sel, t, kind, s, end, false)?;
        self.joins(id, t);
        add_operand(operands, id, Access::Write);
        Ok(Placed::New)
    }
}
