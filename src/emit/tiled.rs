//! A tiled node's code: a loop over the plan's tiles. Each streamed
//! operand has one or two L1 tile buffers (double buffering: tile `t` in
//! buffer `t & 1`, the next tile's fetch issued before the kernel runs on
//! this one), its parts as byte-run tables (`dg_box_t`, one per tile) and
//! one DMA queue per buffer; whole operands are fetched once before the
//! loop and written back once after it. The kernel binding is called once
//! per tile on the tile's shapes and attributes (`ops::tile::TileView`);
//! fields that differ between tiles become `static const` tables indexed
//! by the tile.

use super::network::CallCode;
use super::{args, Ctx};
use crate::error::{Error, Result};
use crate::escape::c_comment;
use crate::ir::{Graph, Node};
use crate::ops;
use crate::ops::kernel::{self, Arg};
use crate::plan::{self, Access, Tiling};

/// A `static const` table of one value per tile (or one, for a whole part).
#[derive(Clone, Debug)]
pub struct Table {
    pub ctype: String,
    pub name: String,
    pub values: Vec<String>,
}

/// One operand of the loop.
#[derive(Clone, Debug)]
pub struct TileOperand {
    /// C identifier prefix (`o0`, `o1`, …).
    pub id: String,
    pub what: String,
    pub home: String,
    pub l1: Vec<String>,
    /// L2 stages of an L3 operand, else `NULL` per buffer.
    pub stage: Vec<String>,
    pub read: bool,
    pub write: bool,
    pub whole: bool,
    pub double: bool,
    /// Index of its first DMA queue in the file's static queue pool (one
    /// queue per L1 buffer; the pool keeps them off the stack).
    pub q0: usize,
}

impl TileOperand {
    /// Buffer index of the current tile.
    pub fn cur(&self) -> &'static str {
        if self.double {
            "cur"
        } else {
            "0"
        }
    }
}

#[derive(Clone, Debug)]
pub struct TiledCode {
    pub count: u32,
    pub any_double: bool,
    /// DMA queues the loop uses: its share of the file's pool.
    pub queues: usize,
    pub tables: Vec<Table>,
    pub operands: Vec<TileOperand>,
    pub calls: Vec<CallCode>,
    /// State the kernel updates (input, output), copied after the loop.
    pub state_updates: Vec<(usize, usize)>,
}

/// Box table entries of one operand.
fn box_values(t: &Tiling, j: usize, whole: bool) -> Vec<String> {
    let tiles: Vec<&plan::tile::Tile> = if whole { t.tiles.iter().take(1).collect() } else { t.tiles.iter().collect() };
    tiles
        .iter()
        .map(|tile| {
            let b = &tile.boxes[j];
            format!(
                "{{{}u, {}u, {{{}u, {}u, {}u}}, {{{}u, {}u, {}u}}}}",
                b.off, b.run, b.n[0], b.n[1], b.n[2], b.s[0], b.s[1], b.s[2]
            )
        })
        .collect()
}

/// One value per tile → the constant's C text, or a reference to a new
/// table of `ctype` (the struct field's element type).
fn varying(node: &Node, tables: &mut Vec<Table>, name: String, ctype: &str, per_tile: &[Arg]) -> Result<String> {
    if per_tile.iter().all(|v| v.same(&per_tile[0])) {
        return Ok(args::c(&per_tile[0]));
    }
    if let Arg::List(first) = &per_tile[0] {
        let lists: Vec<&Vec<Arg>> =
            per_tile.iter().filter_map(|v| if let Arg::List(l) = v { Some(l) } else { None }).collect();
        if lists.len() == per_tile.len() && lists.iter().all(|l| l.len() == first.len()) {
            let mut parts = vec![];
            for e in 0..first.len() {
                let col: Vec<Arg> = lists.iter().map(|l| l[e].clone()).collect();
                parts.push(varying(node, tables, format!("{name}_{e}"), ctype, &col)?);
            }
            return Ok(format!("{{{}}}", parts.join(", ")));
        }
    }
    let numeric = per_tile.iter().all(|v| matches!(v, Arg::U(_) | Arg::I(_) | Arg::F(_)));
    if !numeric || ctype == "ptr" {
        return Err(Error::node(
            node,
            format!("kernel field '{name}' differs between tiles and is not a number: {}", args::c(&per_tile[0])),
        ));
    }
    tables.push(Table { ctype: ctype.to_string(), name: name.clone(), values: per_tile.iter().map(args::c).collect() });
    Ok(format!("{name}[t]"))
}

/// The loop of a tiled node.
pub fn tiled_code(
    ctx: &Ctx,
    n: &plan::NodePlan,
    t: &Tiling,
    g: &Graph,
    node: &Node,
    binding: kernel::Kernel,
) -> Result<TiledCode> {
    let rule =
        ops::of(node).tile.ok_or_else(|| Error::node(node, "the plan tiles a node whose operator has no tile rule"))?;
    let mut tables = vec![];
    let mut operands = vec![];
    let mut queues = 0;
    for (j, o) in t.operands.iter().enumerate() {
        let id = format!("o{j}");
        let double = o.l1.len() == 2;
        tables.push(Table { ctype: "dg_box_t".into(), name: format!("{id}_box"), values: box_values(t, j, o.whole) });
        let stage: Vec<String> = if o.l2_stage.is_empty() {
            o.l1.iter().map(|_| "NULL".to_string()).collect()
        } else {
            o.l2_stage.iter().map(|&b| ctx.expr(b)).collect()
        };
        operands.push(TileOperand {
            id,
            what: format!("{} ({}, {})", c_comment(&ctx.plan.buffers[o.buffer].name), o.home, access_name(o.access)),
            home: ctx.expr(o.buffer),
            l1: o.l1.iter().map(|&b| ctx.expr(b)).collect(),
            stage,
            read: matches!(o.access, Access::Read | Access::ReadWrite),
            write: matches!(o.access, Access::Write | Access::ReadWrite),
            whole: o.whole,
            double,
            q0: queues,
        });
        queues += o.l1.len();
    }
    // Pointers: each slot's operand's current L1 buffer.
    let ptr = |output: bool, i: usize| -> Option<String> {
        let j = t.operands.iter().position(|o| o.slots.iter().any(|s| s.output == output && s.index == i))?;
        Some(format!("{}_l1[{}]", operands[j].id, operands[j].cur()))
    };
    let inputs: Vec<Option<String>> = (0..node.inputs.len()).map(|i| ptr(false, i)).collect();
    let outputs: Vec<Option<String>> = (0..node.outputs.len()).map(|i| ptr(true, i)).collect();
    let scratch = n.scratch.map(|s| ctx.expr(s));
    let mut per_tile: Vec<kernel::KernelCall> = Vec::with_capacity(t.tiles.len());
    for tile in t.tiles.iter() {
        let mut kctx = kernel::KernelCtx {
            model: ctx.model,
            graph: g,
            node,
            inputs: inputs.clone(),
            outputs: outputs.clone(),
            scratch: scratch.clone(),
            members: vec![],
            tile: None,
            rate: ctx.rate.clone(),
        };
        let map = (rule.map)(&kctx, &tile.start, &tile.len)?;
        kctx.tile = Some(map.view(&kctx));
        per_tile.push(binding.call(&kctx)?);
    }
    let calls = merge_calls(node, &per_tile, &mut tables)?;
    let state_updates = per_tile[0].state_updates.clone();
    Ok(TiledCode {
        count: t.count,
        any_double: operands.iter().any(|o| o.double),
        queues,
        tables,
        operands,
        calls,
        state_updates,
    })
}

fn access_name(a: Access) -> &'static str {
    match a {
        Access::Read => "read",
        Access::Write => "written",
        Access::ReadWrite => "read and written",
    }
}

/// The calls of every tile as one call whose varying fields index tables.
fn merge_calls(node: &Node, per_tile: &[kernel::KernelCall], tables: &mut Vec<Table>) -> Result<Vec<CallCode>> {
    let first = &per_tile[0];
    let same_shape = per_tile.iter().all(|k| {
        k.calls.len() == first.calls.len()
            && k.calls
                .iter()
                .zip(&first.calls)
                .all(|(a, b)| a.func == b.func && a.fields.len() == b.fields.len() && a.locals.len() == b.locals.len())
    });
    if !same_shape || per_tile.iter().any(|k| k.state_updates != first.state_updates) {
        return Err(Error::node(node, "its kernel calls differ in form between tiles"));
    }
    let mut out = vec![];
    for (ci, inv) in first.calls.iter().enumerate() {
        args::check(inv).map_err(|e| Error::node(node, e.to_string()))?;
        let mut fields = vec![];
        for (fi, (name, _)) in inv.fields.iter().enumerate() {
            let vals: Vec<Arg> = per_tile.iter().map(|k| k.calls[ci].fields[fi].1.clone()).collect();
            let ctype = args::field_type(&inv.args_type, name).unwrap_or("ptr");
            fields.push((name.to_string(), varying(node, tables, format!("c{ci}_{name}"), ctype, &vals)?));
        }
        let mut locals = vec![];
        for (li, l) in inv.locals.iter().enumerate() {
            let vals: Vec<Arg> = per_tile.iter().map(|k| Arg::List(k.calls[ci].locals[li].values.clone())).collect();
            let elem = l.ctype.trim_start_matches("static ").trim_start_matches("const ");
            let elem = if elem.contains('*') { "ptr" } else { elem };
            let v = varying(node, tables, format!("c{ci}_{}", l.name), elem, &vals)?;
            let inner = v.strip_prefix('{').and_then(|x| x.strip_suffix('}')).unwrap_or(&v).to_string();
            // A per-tile value cannot initialise a static.
            let ctype = if v.contains("[t]") { l.ctype.trim_start_matches("static ") } else { l.ctype };
            locals.push((ctype.to_string(), l.name.to_string(), inner));
        }
        out.push(CallCode {
            comment: inv.comment.as_deref().map(c_comment).unwrap_or_default(),
            func: inv.func.clone(),
            args_type: inv.args_type.clone(),
            fields,
            forked: inv.forked,
            locals,
            pre: vec![],
            post: vec![],
        });
    }
    Ok(out)
}
