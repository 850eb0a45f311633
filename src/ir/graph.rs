//! The graph IR: operator nodes in a petgraph `StableDiGraph` over a tensor
//! table kept in insertion order (IndexMap), so every walk is deterministic.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::ops::{Index, IndexMut};
use std::sync::Arc;

use indexmap::IndexMap;
use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::EdgeRef;
use petgraph::Direction;

use super::types::{TensorData, TensorType};
use crate::error::{Error, Result};

/// Index of a tensor in its graph's [`Tensors`] table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TensorId(usize);

impl TensorId {
    /// The position in the tensor table.
    pub fn index(self) -> usize {
        self.0
    }
}

/// The tensor table: tensors by name in insertion order, indexed by
/// [`TensorId`] (a tensor's id is its position).
#[derive(Clone, Debug, Default)]
pub struct Tensors(IndexMap<String, Tensor>);

/// The nodes that read each tensor, in schedule order ([`Graph::readers`]):
/// a table indexed by tensor, so that planning, which asks it of every
/// tensor at every trial, does not hash.
#[derive(Clone, Debug, Default)]
pub struct Readers(Vec<Vec<NodeIndex>>);

impl Readers {
    /// The readers of `t`; `None` when no node reads it.
    pub fn get(&self, t: &TensorId) -> Option<&Vec<NodeIndex>> {
        self.0.get(t.index()).filter(|v| !v.is_empty())
    }

    pub fn contains_key(&self, t: &TensorId) -> bool {
        self.get(t).is_some()
    }
}

impl std::ops::Index<&TensorId> for Readers {
    type Output = Vec<NodeIndex>;

    fn index(&self, t: &TensorId) -> &Vec<NodeIndex> {
        self.get(t).expect("a tensor some node reads")
    }
}

impl Tensors {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.0.get(name)
    }

    pub fn get_index_of(&self, name: &str) -> Option<TensorId> {
        self.0.get_index_of(name).map(TensorId)
    }

    /// Adds `tensor` under `name`, or replaces the one of that name (which
    /// keeps its id): the id and the tensor replaced.
    pub fn insert_full(&mut self, name: String, tensor: Tensor) -> (TensorId, Option<Tensor>) {
        let (i, old) = self.0.insert_full(name, tensor);
        (TensorId(i), old)
    }

    /// Every id, in table order.
    /// Drop the tensors from `len` on (the last ones added).
    pub fn truncate(&mut self, len: usize) {
        self.0.truncate(len);
    }

    pub fn ids(&self) -> impl Iterator<Item = TensorId> {
        (0..self.0.len()).map(TensorId)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Tensor> + '_ {
        self.0.values_mut()
    }

    /// Gives the tensors in `names` their new names; every id stays.
    pub fn rename(&mut self, names: &HashMap<TensorId, String>) {
        self.0 = std::mem::take(&mut self.0)
            .into_iter()
            .enumerate()
            .map(|(i, (k, mut t))| match names.get(&TensorId(i)) {
                Some(n) => {
                    t.name = n.clone();
                    (n.clone(), t)
                }
                None => (k, t),
            })
            .collect();
    }
}

impl Index<TensorId> for Tensors {
    type Output = Tensor;

    fn index(&self, id: TensorId) -> &Tensor {
        &self.0[id.0]
    }
}

impl IndexMut<TensorId> for Tensors {
    fn index_mut(&mut self, id: TensorId) -> &mut Tensor {
        &mut self.0[id.0]
    }
}

/// An attribute value, every kind ONNX defines.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Float(f32),
    Int(i64),
    String(String),
    Tensor(TensorData),
    /// A subgraph attribute (If/Loop bodies): kept by name and size only;
    /// no supported operator takes one.
    Graph {
        name: String,
        nodes: usize,
    },
    Floats(Vec<f32>),
    Ints(Vec<i64>),
    Strings(Vec<String>),
    Tensors(Vec<TensorData>),
    Graphs(Vec<(String, usize)>),
    SparseTensor,
    SparseTensors(usize),
    TypeProto,
    TypeProtos(usize),
}

/// Where a tensor's value comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// A graph input without an initializer: fed at run time.
    Input,
    /// An initializer (possibly also listed as a graph input).
    Initializer,
    /// Produced by a node.
    Value,
    /// Produced by a node that constant folding removed; `data` holds it.
    Folded,
}

#[derive(Clone, Debug)]
pub struct Tensor {
    pub name: String,
    pub ty: TensorType,
    pub origin: Origin,
    /// Constant value: initializers and folded values. Shared: a copy of
    /// the graph, or a folded Identity, holds the same bytes, not a copy.
    pub data: Option<Arc<TensorData>>,
    /// True for graph inputs whose type is `sequence(tensor)`
    /// (SGDOptimizerV2's `params`, `gradients`, …).
    pub sequence: bool,
}

/// A node's operator, resolved once at import against the operator
/// registry (`ops::def` gives its facts). Plain data: `ir` knows no
/// operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpId {
    pub family: u16,
    pub index: u16,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    /// The operator type as written in the file (for messages).
    pub op: String,
    pub op_id: OpId,
    pub domain: String,
    /// Input slots; `None` for an omitted optional input (empty name).
    pub inputs: Vec<Option<TensorId>>,
    pub outputs: Vec<Option<TensorId>>,
    pub attrs: IndexMap<String, Attr>,
    /// What deploygen's own passes record on the node (never read from a file).
    pub marks: Marks,
    /// Position in the ONNX file's node list; breaks schedule ties.
    pub order: usize,
}

/// What a pass of deploygen records on a node, beside its ONNX attributes,
/// for the later stages that read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Marks {
    /// The activation the kernel applies to the output (`lower::fuse`):
    /// the `act` code of the activation's `OpDef::act`.
    pub fused_act: Option<i64>,
    /// A copy `plan::recompute` made: the name of the node it copies.
    pub recomputed_from: Option<String>,
    /// A BatchNorm copy that normalises with the statistics its training
    /// original saved (input 4 is `1 / sqrt(var + eps)`).
    pub saved_stats: bool,
}

impl Node {
    pub fn input(&self, i: usize) -> Option<TensorId> {
        self.inputs.get(i).copied().flatten()
    }

    pub fn output(&self, i: usize) -> Option<TensorId> {
        self.outputs.get(i).copied().flatten()
    }

    /// Name of an attribute value's kind, for messages.
    fn kind_of(a: &Attr) -> &'static str {
        match a {
            Attr::Float(_) => "FLOAT",
            Attr::Int(_) => "INT",
            Attr::String(_) => "STRING",
            Attr::Tensor(_) => "TENSOR",
            Attr::Graph { .. } => "GRAPH",
            Attr::Floats(_) => "FLOATS",
            Attr::Ints(_) => "INTS",
            Attr::Strings(_) => "STRINGS",
            Attr::Tensors(_) => "TENSORS",
            Attr::Graphs(_) => "GRAPHS",
            Attr::SparseTensor => "SPARSE_TENSOR",
            Attr::SparseTensors(_) => "SPARSE_TENSORS",
            Attr::TypeProto => "TYPE_PROTO",
            Attr::TypeProtos(_) => "TYPE_PROTOS",
        }
    }

    fn wrong_type(&self, name: &str, want: &'static str) -> Error {
        let found = self.attrs.get(name).map_or("nothing", Node::kind_of);
        Error::AttrType { node: self.name.clone(), op: self.op.clone(), attr: name.to_string(), want, found }
    }

    /// The attribute of this node an error refused as `want` where it
    /// holds an INT.
    fn int_refused_as(&self, e: &Error, wanted: &str) -> Option<String> {
        match e {
            Error::AttrType { node, attr, want, found: "INT", .. } if *node == self.name && *want == wanted => {
                Some(attr.clone())
            }
            _ => None,
        }
    }

    /// The attribute an error of [`Node::ints`] refused for being a single
    /// INT where INTS are expected (some exporters write Squeeze's `axes`
    /// that way): the typing pass reads it as a one-element list instead.
    pub fn int_refused_as_ints(&self, e: &Error) -> Option<String> {
        self.int_refused_as(e, "INTS")
    }

    /// The attribute an error of [`Node::float`] refused for being an INT
    /// where a FLOAT is expected (Deeploy writes Pad's `value` that way):
    /// the typing pass reads it as that float instead, when exact.
    pub fn int_refused_as_float(&self, e: &Error) -> Option<String> {
        let name = self.int_refused_as(e, "a FLOAT")?;
        matches!(self.attrs.get(&name), Some(Attr::Int(v)) if v.unsigned_abs() <= 1 << 24).then_some(name)
    }

    /// The typed attribute accessors: `Ok(None)` when absent, an error
    /// naming node and attribute when present with another type. Shape
    /// rules read every attribute through these, so a model that passes
    /// lowering has well-typed attributes.
    pub fn int(&self, name: &str) -> Result<Option<i64>> {
        match self.attrs.get(name) {
            None => Ok(None),
            Some(Attr::Int(v)) => Ok(Some(*v)),
            Some(_) => Err(self.wrong_type(name, "an INT")),
        }
    }

    /// An INT attribute within `lo..=hi` (or the default when absent).
    pub fn int_in(&self, name: &str, default: i64, lo: i64, hi: i64) -> Result<i64> {
        let v = self.int(name)?.unwrap_or(default);
        if v < lo || v > hi {
            return Err(Error::node(self, format!("attribute '{name}' = {v} is out of range {lo}..={hi}")));
        }
        Ok(v)
    }

    /// A 0/1 INT attribute.
    pub fn flag(&self, name: &str, default: bool) -> Result<bool> {
        Ok(self.int_in(name, default as i64, 0, 1)? == 1)
    }

    pub fn float(&self, name: &str) -> Result<Option<f32>> {
        match self.attrs.get(name) {
            None => Ok(None),
            Some(Attr::Float(v)) => Ok(Some(*v)),
            Some(_) => Err(self.wrong_type(name, "a FLOAT")),
        }
    }

    pub fn ints(&self, name: &str) -> Result<Option<&[i64]>> {
        match self.attrs.get(name) {
            None => Ok(None),
            Some(Attr::Ints(v)) => Ok(Some(v)),
            Some(_) => Err(self.wrong_type(name, "INTS")),
        }
    }

    pub fn floats(&self, name: &str) -> Result<Option<&[f32]>> {
        match self.attrs.get(name) {
            None => Ok(None),
            Some(Attr::Floats(v)) => Ok(Some(v)),
            Some(_) => Err(self.wrong_type(name, "FLOATS")),
        }
    }

    pub fn string(&self, name: &str) -> Result<Option<&str>> {
        match self.attrs.get(name) {
            None => Ok(None),
            Some(Attr::String(v)) => Ok(Some(v)),
            Some(_) => Err(self.wrong_type(name, "a STRING")),
        }
    }

    pub fn tensor_attr(&self, name: &str) -> Result<Option<&TensorData>> {
        match self.attrs.get(name) {
            None => Ok(None),
            Some(Attr::Tensor(v)) => Ok(Some(v)),
            Some(_) => Err(self.wrong_type(name, "a TENSOR")),
        }
    }

    /// Unchecked readers for stages after lowering, whose shape rules
    /// already read (and so validated) the attributes: `None` when absent.
    pub fn attr_int(&self, name: &str) -> Option<i64> {
        match self.attrs.get(name)? {
            Attr::Int(v) => Some(*v),
            _ => None,
        }
    }

    pub fn attr_float(&self, name: &str) -> Option<f32> {
        match self.attrs.get(name)? {
            Attr::Float(v) => Some(*v),
            _ => None,
        }
    }

    pub fn attr_ints(&self, name: &str) -> Option<&[i64]> {
        match self.attrs.get(name)? {
            Attr::Ints(v) => Some(v),
            _ => None,
        }
    }

    pub fn attr_str(&self, name: &str) -> Option<&str> {
        match self.attrs.get(name)? {
            Attr::String(v) => Some(v),
            _ => None,
        }
    }
}

/// One ONNX graph, imported.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub name: String,
    pub tensors: Tensors,
    pub dag: StableDiGraph<Node, TensorId>,
    /// Graph inputs in file order, initializers excluded.
    pub inputs: Vec<TensorId>,
    pub outputs: Vec<TensorId>,
    /// Initializers in file order.
    pub initializers: Vec<TensorId>,
    /// Domain → opset version (`""` is the default domain).
    pub opsets: IndexMap<String, i64>,
    /// Number of nodes in the ONNX file, before folding.
    pub onnx_nodes: usize,
    /// Topological order, ties broken by file order.
    pub schedule: Vec<NodeIndex>,
    /// One-line notices from import and lowering that need no action to
    /// proceed but deserve a look (e.g. a declared shape accepted although
    /// it differs from the computed one by size-1 dims).
    pub warnings: Vec<String>,
}

impl Graph {
    pub fn tensor(&self, id: TensorId) -> &Tensor {
        &self.tensors[id]
    }

    pub fn tensor_mut(&mut self, id: TensorId) -> &mut Tensor {
        &mut self.tensors[id]
    }

    pub fn id(&self, name: &str) -> Option<TensorId> {
        self.tensors.get_index_of(name)
    }

    pub fn name_of(&self, id: TensorId) -> &str {
        &self.tensors[id].name
    }

    pub fn node(&self, n: NodeIndex) -> &Node {
        &self.dag[n]
    }

    /// Nodes in schedule order.
    pub fn nodes(&self) -> impl Iterator<Item = (NodeIndex, &Node)> + '_ {
        self.schedule.iter().map(move |&n| (n, &self.dag[n]))
    }

    pub fn node_count(&self) -> usize {
        self.dag.node_count()
    }

    /// The node that writes tensor `t`, if any.
    pub fn producer(&self, t: TensorId) -> Option<NodeIndex> {
        self.dag.node_indices().find(|&n| self.dag[n].outputs.contains(&Some(t)))
    }

    /// Nodes that read tensor `t`, in schedule order.
    pub fn consumers(&self, t: TensorId) -> Vec<NodeIndex> {
        self.schedule.iter().copied().filter(|&n| self.dag[n].inputs.contains(&Some(t))).collect()
    }

    /// The nodes that read each tensor, in schedule order: what
    /// [`Graph::consumers`] says of every tensor, in one pass over the
    /// graph (for code that asks about many tensors).
    pub fn readers(&self) -> Readers {
        let mut r = vec![Vec::new(); self.tensors.len()];
        for &n in &self.schedule {
            for &t in self.dag[n].inputs.iter().flatten() {
                let v: &mut Vec<NodeIndex> = &mut r[t.index()];
                if v.last() != Some(&n) {
                    v.push(n);
                }
            }
        }
        Readers(r)
    }

    /// Opset version of a node's domain (`"?"` when the model does not
    /// import that domain).
    pub fn opset_of(&self, domain: &str) -> String {
        let key = if domain == "ai.onnx" { "" } else { domain };
        self.opsets.get(key).map(|v| v.to_string()).unwrap_or_else(|| "?".into())
    }

    /// Rebuild the producer→consumer edges from the nodes' slots.
    pub fn rebuild_edges(&mut self) {
        self.dag.clear_edges();
        let mut producer: IndexMap<TensorId, NodeIndex> = IndexMap::new();
        for n in self.dag.node_indices() {
            for t in self.dag[n].outputs.iter().flatten() {
                producer.insert(*t, n);
            }
        }
        let idx: Vec<NodeIndex> = self.dag.node_indices().collect();
        for n in idx {
            let ins: Vec<TensorId> = self.dag[n].inputs.iter().flatten().copied().collect();
            for t in ins {
                if let Some(&p) = producer.get(&t) {
                    self.dag.add_edge(p, n, t);
                }
            }
        }
    }

    /// Kahn's algorithm with a min-heap on file order: the schedule follows
    /// the model as written wherever dependencies allow, so generated code
    /// reads like the model and is byte-stable. A cycle is an error naming
    /// its nodes.
    pub fn compute_schedule(&mut self) -> Result<()> {
        let mut indeg: IndexMap<NodeIndex, usize> = IndexMap::new();
        for n in self.dag.node_indices() {
            indeg.insert(n, self.dag.edges_directed(n, Direction::Incoming).count());
        }
        let mut heap: BinaryHeap<Reverse<(usize, NodeIndex)>> =
            indeg.iter().filter(|(_, &d)| d == 0).map(|(&n, _)| Reverse((self.dag[n].order, n))).collect();
        let mut order = Vec::with_capacity(indeg.len());
        while let Some(Reverse((_, n))) = heap.pop() {
            order.push(n);
            for e in self.dag.edges_directed(n, Direction::Outgoing) {
                let m = e.target();
                let d = indeg.get_mut(&m).expect("every node has an in-degree");
                *d -= 1;
                if *d == 0 {
                    heap.push(Reverse((self.dag[m].order, m)));
                }
            }
        }
        if order.len() != indeg.len() {
            return Err(Error::Cycle { nodes: self.find_cycle(&order) });
        }
        self.schedule = order;
        Ok(())
    }

    /// Names of the nodes on one cycle among those Kahn could not schedule.
    fn find_cycle(&self, scheduled: &[NodeIndex]) -> Vec<String> {
        let left: Vec<NodeIndex> = self.dag.node_indices().filter(|n| !scheduled.contains(n)).collect();
        // Walk backwards through unscheduled predecessors until a node repeats.
        let Some(&start) = left.iter().min_by_key(|&&n| self.dag[n].order) else {
            return vec![];
        };
        let mut path = vec![start];
        let mut cur = start;
        loop {
            let next = self
                .dag
                .edges_directed(cur, Direction::Incoming)
                .map(|e| e.source())
                .filter(|s| left.contains(s))
                .min_by_key(|&s| self.dag[s].order);
            let Some(next) = next else { break };
            if let Some(pos) = path.iter().position(|&p| p == next) {
                let mut cyc: Vec<String> = path[pos..].iter().rev().map(|&n| self.display_node(n)).collect();
                cyc.push(self.display_node(next));
                return cyc;
            }
            path.push(next);
            cur = next;
        }
        left.iter().map(|&n| self.display_node(n)).collect()
    }

    /// `'name' (Op)`, for messages.
    pub fn display_node(&self, n: NodeIndex) -> String {
        let node = &self.dag[n];
        format!("'{}' ({})", node.name, node.op)
    }

    /// Total bytes of initializer data.
    pub fn initializer_bytes(&self) -> usize {
        self.initializers.iter().filter_map(|&t| self.tensors[t].data.as_ref()).map(|d| d.bytes.len()).sum()
    }
}
