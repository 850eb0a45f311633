//! The memory map as SVG: one panel per level, schedule step across,
//! arena address up, one rectangle per buffer (hover for name, bytes,
//! lifetime). The live-bytes curve (whose peak is the lower bound) is drawn
//! over the buffers, so the gap between it and the arena top is the waste.
//! Tile buffers of tiled nodes (L1 tiles, their L2 stages) are outlined and
//! name their node's tiling; a strip under the L1 panel shows, per step,
//! whether the node runs in tiles (and how many) or untiled (and why).

use std::fmt::Write as _;

use super::buffers::{BufId, Buffer, Kind};
use super::{thousands, Level, Plan};
use crate::escape::xml_text;

const PANEL_W: f64 = 960.0;
const PANEL_H: f64 = 300.0;
const LEFT: f64 = 96.0;
const TOP: f64 = 56.0;
const GAP: f64 = 86.0;

fn color(k: Kind) -> &'static str {
    match k {
        Kind::Input => "#6baed6",
        Kind::Param => "#e6550d",
        Kind::Frozen => "#fdae6b",
        Kind::Constant => "#fdd0a2",
        Kind::GradBuffer => "#756bb1",
        Kind::OptimizerInput => "#9e9ac8",
        Kind::Output => "#31a354",
        Kind::Activation => "#74c476",
        Kind::Gradient => "#de2d26",
        Kind::Scratch => "#636363",
        Kind::Staging => "#fd8d3c",
        Kind::L1Operand => "#3182bd",
        Kind::Static => "#bdbdbd",
    }
}

const LEGEND: [Kind; 12] = [
    Kind::Input,
    Kind::Output,
    Kind::Param,
    Kind::Frozen,
    Kind::Constant,
    Kind::GradBuffer,
    Kind::Activation,
    Kind::Gradient,
    Kind::Staging,
    Kind::L1Operand,
    Kind::Scratch,
    Kind::OptimizerInput,
];

/// Draw the plan.
pub fn svg(plan: &Plan, title: &str) -> String {
    let steps = plan.steps.max(1) as f64;
    let height = TOP + 3.0 * (PANEL_H + GAP) + 40.0;
    let width = LEFT + PANEL_W + 40.0;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="12">"#
    );
    let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        o,
        r#"<text x="{LEFT}" y="22" font-size="16" font-weight="bold">{} — {}, default level {}</text>"#,
        xml_text(title),
        xml_text(&plan.platform.name),
        plan.default_mem
    );
    // Legend.
    let mut x = LEFT;
    for k in LEGEND {
        let _ = writeln!(
            o,
            r#"<rect x="{x}" y="32" width="10" height="10" fill="{}"/><text x="{}" y="41" font-size="10">{}</text>"#,
            color(k),
            x + 13.0,
            k.name()
        );
        x += 14.0 + 6.2 * k.name().len() as f64 + 8.0;
    }
    for (i, l) in Level::ALL.iter().enumerate() {
        panel(&mut o, plan, *l, TOP + i as f64 * (PANEL_H + GAP) + 30.0, steps);
    }
    o.push_str("</svg>\n");
    o
}

fn panel(o: &mut String, plan: &Plan, l: Level, y0: f64, steps: f64) {
    let lp = plan.level(l);
    let arena = lp.arena_bytes;
    let _ = writeln!(
        o,
        r#"<text x="{LEFT}" y="{}" font-size="13" font-weight="bold">{l} arena: {} B, lower bound {} B, efficiency {:.4}  (capacity {} B, reserved {} B, static {} B)</text>"#,
        y0 - 8.0,
        thousands(arena),
        thousands(lp.lower_bound_bytes),
        lp.efficiency,
        thousands(lp.capacity),
        thousands(lp.reserved_bytes),
        thousands(lp.static_bytes)
    );
    let _ = writeln!(
        o,
        "<rect x=\"{LEFT}\" y=\"{y0}\" width=\"{PANEL_W}\" height=\"{PANEL_H}\" fill=\"#f7f7f7\" stroke=\"#999\"/>"
    );
    if arena == 0 {
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" fill=\"#777\">empty: nothing lives in the {l} arena</text>",
            LEFT + 12.0,
            y0 + PANEL_H / 2.0
        );
        return;
    }
    let sx = PANEL_W / steps;
    let sy = PANEL_H / arena as f64;
    let base = y0 + PANEL_H;
    // Axes: address ticks, step ticks.
    for k in 0..=4 {
        let a = arena as f64 * k as f64 / 4.0;
        let y = base - a * sy;
        let _ = writeln!(
            o,
            "<line x1=\"{}\" y1=\"{y:.1}\" x2=\"{LEFT}\" y2=\"{y:.1}\" stroke=\"#999\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"10\">{}</text>",
            LEFT - 4.0,
            LEFT - 6.0,
            y + 3.0,
            thousands(a as u64)
        );
    }
    let tick = ((steps / 10.0).ceil() as u32).max(1);
    let mut s = 0;
    while (s as f64) <= steps {
        let x = LEFT + s as f64 * sx;
        let _ = writeln!(
            o,
            "<line x1=\"{x:.1}\" y1=\"{base}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#999\"/><text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\">{s}</text>",
            base + 4.0,
            base + 15.0
        );
        s += tick;
    }
    let _ = writeln!(
        o,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="10">schedule step</text>"#,
        LEFT + PANEL_W / 2.0,
        base + 28.0
    );
    let _ = writeln!(
        o,
        r#"<text x="16" y="{:.1}" transform="rotate(-90 16 {:.1})" text-anchor="middle" font-size="10">address (bytes)</text>"#,
        y0 + PANEL_H / 2.0,
        y0 + PANEL_H / 2.0
    );
    // Buffers; tile buffers outlined, with their node's tiling.
    let bufs: Vec<(&Buffer, u64)> = plan.arena(l);
    let tiles = tile_buffers(plan);
    for (b, off) in &bufs {
        let x = LEFT + b.start as f64 * sx;
        let w = ((b.end - b.start + 1) as f64 * sx).max(0.8);
        let h = (b.size as f64 * sy).max(0.6);
        let y = base - (off + b.size) as f64 * sy;
        let (stroke, width, note) = match tiles.get(&b.id) {
            Some(t) => ("#08306b", 1.2, format!("; {t}")),
            None => ("#333", 0.3, String::new()),
        };
        let _ = writeln!(
            o,
            "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\" fill=\"{}\" fill-opacity=\"0.85\" stroke=\"{stroke}\" stroke-width=\"{width}\"><title>{} ({}): {} B at offset {}, live steps {}..{}{}</title></rect>",
            color(b.kind),
            xml_text(&b.name),
            b.kind.name(),
            thousands(b.bytes),
            thousands(*off),
            b.start,
            b.end,
            xml_text(&note)
        );
    }
    if l == Level::L1 {
        tiling_strip(o, plan, base + 34.0, sx);
    }
    // Live bytes per step: its peak is the lower bound.
    let mut live = vec![0u64; plan.steps.max(1) as usize];
    for (b, _) in &bufs {
        for v in live.iter_mut().take(b.end as usize + 1).skip(b.start as usize) {
            *v += b.size;
        }
    }
    let mut pts = String::new();
    for (i, v) in live.iter().enumerate() {
        let y = base - *v as f64 * sy;
        let _ = write!(pts, "{:.1},{y:.1} {:.1},{y:.1} ", LEFT + i as f64 * sx, LEFT + (i + 1) as f64 * sx);
    }
    let _ = writeln!(
        o,
        r#"<polyline points="{}" fill="none" stroke="black" stroke-width="1.2" stroke-dasharray="4 2"><title>bytes live at each step (peak = lower bound)</title></polyline>"#,
        pts.trim_end()
    );
    if plan.steps > plan.main_steps {
        let x = LEFT + plan.main_steps as f64 * sx;
        let _ = writeln!(
            o,
            "<line x1=\"{x:.1}\" y1=\"{y0}\" x2=\"{x:.1}\" y2=\"{base}\" stroke=\"#555\" stroke-dasharray=\"2 2\"/><text x=\"{:.1}\" y=\"{}\" font-size=\"10\" fill=\"#555\">optimizer</text>",
            x + 3.0,
            y0 + 12.0
        );
    }
}

/// Per tile buffer (L1 tiles and L2 stages): what it holds for which node.
fn tile_buffers(plan: &Plan) -> std::collections::HashMap<BufId, String> {
    let mut m = std::collections::HashMap::new();
    for n in &plan.nodes {
        let Some(t) = &n.tiling else { continue };
        for o in &t.operands {
            let what = format!(
                "tile buffer of '{}' for node '{}' ({}): {} tile(s) of {:?}, {}{}",
                plan.buffers[o.buffer].name,
                n.name,
                n.op,
                t.count,
                t.tile,
                if o.whole {
                    "loaded once"
                } else if o.double {
                    "double-buffered"
                } else {
                    "single-buffered"
                },
                if o.l2_stage.is_empty() { "" } else { ", staged through L2 from L3" }
            );
            for &b in o.l1.iter().chain(&o.l2_stage) {
                m.insert(b, what.clone());
            }
        }
    }
    m
}

/// One cell per step under the L1 panel: tiled (blue, with its tile
/// count), untiled (grey, with the reason), shape-only (empty).
fn tiling_strip(o: &mut String, plan: &Plan, y: f64, sx: f64) {
    let _ =
        writeln!(o, r#"<text x="{}" y="{:.1}" text-anchor="end" font-size="10">tiling</text>"#, LEFT - 6.0, y + 9.0);
    let _ = writeln!(
        o,
        r##"<text x="{LEFT}" y="{:.1}" font-size="9" fill="#555">per step: blue, the node runs in L1 tiles (hover: tiles, buffering, cost); grey, untiled (hover: why)</text>"##,
        y + 22.0
    );
    for n in &plan.nodes {
        let x = LEFT + n.step as f64 * sx;
        let (fill, label, title) = match (&n.tiling, &n.untiled) {
            (Some(t), _) => (
                "#3182bd",
                t.count.to_string(),
                format!(
                    "step {} '{}' ({}): tiled, {} tile(s) of {:?}, {} buffering; {}",
                    n.step,
                    n.name,
                    n.op,
                    t.count,
                    t.tile,
                    t.buffering(),
                    t.why
                ),
            ),
            (None, Some(why)) => {
                ("#bdbdbd", String::new(), format!("step {} '{}' ({}): untiled, {why}", n.step, n.name, n.op))
            }
            (None, None) => continue,
        };
        let _ = write!(
            o,
            "<rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"12\" fill=\"{fill}\" stroke=\"white\" stroke-width=\"0.3\"><title>{}</title></rect>",
            sx.max(0.8),
            xml_text(&title)
        );
        if sx >= 14.0 {
            let _ = write!(
                o,
                "<text x=\"{:.2}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"8\" fill=\"white\">{label}</text>",
                x + sx / 2.0,
                y + 9.0
            );
        }
        o.push('\n');
    }
}
