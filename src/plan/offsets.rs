//! Offset assignment in one arena: buffers with a size and a lifetime
//! `[start, end]` (inclusive schedule steps) get offsets so that no two
//! buffers live at the same step overlap in memory.
//!
//! - [`lower_bound`]: the most bytes live at any one step; no assignment can
//!   use less.
//! - [`bump`]: the naive allocator (every buffer its own range).
//! - [`first_fit`]: greedy, one order: each buffer at the lowest offset that
//!   clears every already placed buffer it shares a step with.
//! - [`sweep`]: buffers placed in order of first step, as a program
//!   allocates them; O(n log n) however many buffers live together.
//! - [`assign`]: greedy by size as the floor, improved by trying several
//!   orders (by size, lifetime, size × lifetime, start, end), then a seeded
//!   local search over orders and, for small instances, every order; keeps the best.
//!   Deterministic: the random orders come from a fixed seed. Bounded: the
//!   orders after the first stop at [`SEARCH_WORK`] comparisons, and an
//!   instance past [`GREEDY_PAIRS`] is placed by [`sweep`] alone.
//! - [`verify`]: an independent check of any assignment.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::fmt;
use std::ops::Bound;

/// One buffer to place. Sizes should already be multiples of the alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    pub size: u64,
    /// First schedule step at which the buffer is live.
    pub start: u32,
    /// Last schedule step at which the buffer is live (inclusive).
    pub end: u32,
}

impl Item {
    pub fn new(size: u64, start: u32, end: u32) -> Item {
        Item { size, start: start.min(end), end: start.max(end) }
    }

    /// Live at a common step.
    pub fn conflicts(&self, o: &Item) -> bool {
        self.start <= o.end && o.start <= self.end
    }

    fn span(&self) -> u64 {
        u64::from(self.end.saturating_sub(self.start)) + 1
    }
}

/// The most bytes live at any one step.
pub fn lower_bound(items: &[Item]) -> u64 {
    // Sweep: +size at start, -size after end.
    let mut ev: Vec<(u32, i8, u64)> = Vec::with_capacity(items.len() * 2);
    for it in items {
        ev.push((it.start, 1, it.size));
        ev.push((it.end.saturating_add(1), -1, it.size));
    }
    // At the same step, releases (ends at step-1) come before acquisitions.
    ev.sort_by_key(|&(t, d, _)| (t, d));
    let (mut cur, mut best) = (0u64, 0u64);
    for (_, d, s) in ev {
        if d > 0 {
            cur += s;
            best = best.max(cur);
        } else {
            cur -= s;
        }
    }
    best
}

/// Arena size of an assignment: the highest end offset.
pub fn arena_of(items: &[Item], offsets: &[u64]) -> u64 {
    items.iter().zip(offsets).map(|(it, &o)| o.saturating_add(it.size)).max().unwrap_or(0)
}

/// The naive bump allocator: buffers one after the other, nothing reused.
pub fn bump(items: &[Item]) -> Vec<u64> {
    let mut off = 0;
    items
        .iter()
        .map(|it| {
            let o = off;
            off += it.size;
            o
        })
        .collect()
}

/// Which items are live at a common step with a given lifetime, found
/// without scanning every item: the items sorted by start step, under a
/// tree of the latest end step in each range of them. A query costs
/// O((k + 1) log n) for k items found, so placing a long schedule's
/// buffers stays near-linear.
struct Lifetimes {
    by_start: Vec<usize>,
    starts: Vec<u32>,
    /// Latest end per tree node; node 1 covers every item, node `k`'s
    /// children are `2k` and `2k + 1`, the leaves start at `leaves`.
    max_end: Vec<u32>,
    leaves: usize,
}

impl Lifetimes {
    fn new(items: &[Item]) -> Lifetimes {
        let mut by_start: Vec<usize> = (0..items.len()).collect();
        by_start.sort_by_key(|&i| (items[i].start, i));
        let starts = by_start.iter().map(|&i| items[i].start).collect();
        let leaves = items.len().next_power_of_two();
        let mut max_end = vec![0u32; 2 * leaves];
        for (p, &i) in by_start.iter().enumerate() {
            max_end[leaves + p] = items[i].end;
        }
        for k in (1..leaves).rev() {
            max_end[k] = max_end[2 * k].max(max_end[2 * k + 1]);
        }
        Lifetimes { by_start, starts, max_end, leaves }
    }

    /// Calls `f` with every item live at some step of `[start, end]`.
    fn overlapping(&self, start: u32, end: u32, mut f: impl FnMut(usize)) {
        // Items that start after `end` cannot overlap: only a prefix counts.
        let limit = self.starts.partition_point(|&s| s <= end);
        let mut stack = vec![(1usize, 0usize, self.leaves)];
        while let Some((k, lo, hi)) = stack.pop() {
            if lo >= limit || self.max_end[k] < start {
                continue;
            }
            if hi - lo == 1 {
                f(self.by_start[lo]);
                continue;
            }
            let mid = (lo + hi) / 2;
            stack.push((2 * k + 1, mid, hi));
            stack.push((2 * k, lo, mid));
        }
    }
}

/// Greedy first fit in the given order.
pub fn first_fit(items: &[Item], order: &[usize], align: u64) -> Vec<u64> {
    first_fit_in(items, &Lifetimes::new(items), order, align, &mut 0)
}

/// [`first_fit`] with the items' lifetime index built once, for the
/// search that tries many orders of the same items. Adds to `work` one
/// per buffer placed and one per placed buffer it was compared with.
fn first_fit_in(items: &[Item], lifetimes: &Lifetimes, order: &[usize], align: u64, work: &mut u64) -> Vec<u64> {
    let align = align.max(1);
    let mut offsets = vec![0u64; items.len()];
    let mut placed = vec![false; items.len()];
    let mut busy: Vec<(u64, u64)> = Vec::new();
    for &i in order {
        let it = items[i];
        busy.clear();
        lifetimes.overlapping(it.start, it.end, |j| {
            if placed[j] {
                busy.push((offsets[j], offsets[j] + items[j].size));
            }
        });
        *work += 1 + busy.len() as u64;
        busy.sort_unstable();
        let mut cand = 0u64;
        for &(lo, hi) in &busy {
            if lo >= cand + it.size {
                break;
            }
            if hi > cand {
                cand = hi.div_ceil(align) * align;
            }
        }
        offsets[i] = cand;
        placed[i] = true;
    }
    offsets
}

/// Result of [`assign`].
#[derive(Clone, Debug)]
pub struct Assignment {
    pub offsets: Vec<u64>,
    pub arena: u64,
    pub lower_bound: u64,
    /// Arena of plain greedy-by-size first fit (the floor).
    pub greedy_arena: u64,
    /// Which order won.
    pub strategy: String,
}

impl Assignment {
    pub fn efficiency(&self) -> f64 {
        efficiency(self.lower_bound, self.arena)
    }
}

/// Lower bound / arena, 1.0 for an empty arena.
pub fn efficiency(lower_bound: u64, arena: u64) -> f64 {
    if arena == 0 {
        1.0
    } else {
        lower_bound as f64 / arena as f64
    }
}

/// splitmix64: a small deterministic generator for the perturbed orders.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Instances up to this many buffers try every order.
pub const EXHAUSTIVE_MAX: usize = 7;
/// The seeded local search over orders on larger instances stops after
/// this many steps without a smaller arena: a search that still finds
/// better orders goes on,
pub const LOCAL_SEARCH_STEPS: usize = 300;
/// up to this many buffer placements in all (each step places every
/// buffer once), so a long search costs about the same whatever the
/// instance's size.
pub const LOCAL_SEARCH_PLACEMENTS: usize = 400_000;

fn sorted(items: &[Item], key: impl Fn(&Item) -> (u64, u64, u64)) -> Vec<usize> {
    let mut v: Vec<usize> = (0..items.len()).collect();
    // Descending by key, ties by index: stable and deterministic.
    v.sort_by(|&a, &b| key(&items[b]).cmp(&key(&items[a])).then(a.cmp(&b)));
    v
}

/// Most comparisons (see [`first_fit_in`]'s `work`) that the orders tried
/// after greedy by size may cost in all. The local search's step bounds
/// count orders, and an order costs as many comparisons as buffers share
/// steps: a long training step keeps thousands of forward values live
/// together, where each order costs millions. The zoo's searches stay far
/// below it.
pub const SEARCH_WORK: u64 = 20_000_000;

/// Instances with more pairs of buffers live together than this are
/// placed by [`sweep`] alone: greedy by size compares each buffer with
/// every placed one it shares a step with, quadratic in a step that keeps
/// thousands of values live (a 4,000-block training chain has ~10^9 such
/// pairs; the zoo's largest, ~10^5).
pub const GREEDY_PAIRS: u64 = 20_000_000;

/// Buffers placed as a program allocates them: in order of their first
/// step, each in the smallest free gap that holds it (or on top), freed
/// after its last step, neighbouring gaps merged. O(n log n) whatever the
/// overlap. Also returns how many pairs of buffers with bytes share a step.
pub fn sweep(items: &[Item], align: u64) -> (Vec<u64>, u64) {
    let align = align.max(1);
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| (items[i].start, i));
    let mut offsets = vec![0u64; items.len()];
    let mut free = Gaps::default();
    let mut live: BinaryHeap<Reverse<(u32, usize)>> = BinaryHeap::new();
    let mut pairs = 0u64;
    for i in order {
        let it = items[i];
        while let Some(&Reverse((end, j))) = live.peek() {
            if end >= it.start {
                break;
            }
            live.pop();
            free.release(offsets[j], items[j].size.div_ceil(align) * align);
        }
        let size = it.size.div_ceil(align) * align;
        if size > 0 {
            pairs += live.len() as u64;
            offsets[i] = free.take(size);
            live.push(Reverse((it.end, i)));
        }
    }
    (offsets, pairs)
}

/// The free ranges below the top of a [`sweep`]'s arena.
#[derive(Default)]
struct Gaps {
    by_offset: std::collections::BTreeMap<u64, u64>,
    by_len: BTreeSet<(u64, u64)>,
    top: u64,
}

impl Gaps {
    fn take(&mut self, size: u64) -> u64 {
        if let Some(&(len, off)) = self.by_len.range((size, 0)..).next() {
            self.remove(off, len);
            if len > size {
                self.insert(off + size, len - size);
            }
            return off;
        }
        // No gap holds it: grow from the gap that ends at the top, if any.
        let off = match self.by_offset.last_key_value() {
            Some((&o, &l)) if o + l == self.top => {
                self.remove(o, l);
                o
            }
            _ => self.top,
        };
        self.top = off + size;
        off
    }

    fn release(&mut self, mut off: u64, mut len: u64) {
        if let Some((&o, &l)) = self.by_offset.range(..off).next_back() {
            if o + l == off {
                self.remove(o, l);
                (off, len) = (o, l + len);
            }
        }
        if let Some(&l) = self.by_offset.get(&(off + len)) {
            self.remove(off + len, l);
            len += l;
        }
        if off + len == self.top {
            self.top = off;
        } else {
            self.insert(off, len);
        }
    }

    fn insert(&mut self, off: u64, len: u64) {
        self.by_offset.insert(off, len);
        self.by_len.insert((len, off));
    }

    fn remove(&mut self, off: u64, len: u64) {
        self.by_offset.remove(&off);
        self.by_len.remove(&(len, off));
    }
}

/// Greedy by size, improved by a search over orders; keeps the best.
pub fn assign(items: &[Item], align: u64) -> Assignment {
    let lb = lower_bound(items);
    let n = items.len();
    let (swept, pairs) = sweep(items, align);
    if pairs > GREEDY_PAIRS {
        let arena = arena_of(items, &swept);
        let strategy =
            format!("sweep by first step ({pairs} pairs of buffers live together: past the greedy search's bound)");
        return Assignment { offsets: swept, arena, lower_bound: lb, greedy_arena: arena, strategy };
    }
    let by_size = sorted(items, |it| (it.size, it.span(), 0));
    let lifetimes = Lifetimes::new(items);
    let work = std::cell::Cell::new(0u64);
    let first_fit = |order: &[usize]| {
        let mut w = work.get();
        let offs = first_fit_in(items, &lifetimes, order, align, &mut w);
        work.set(w);
        offs
    };
    let greedy = first_fit(&by_size);
    let greedy_arena = arena_of(items, &greedy);
    work.set(0);
    // Another order is tried while the best is above the bound and the
    // comparisons so far leave room for it.
    let worth = |best: u64| best > lb && work.get() < SEARCH_WORK;
    let mut best = (greedy_arena, greedy, "greedy by size".to_string());
    let mut best_order = by_size;
    let consider = |offs: Vec<u64>, name: &str, best: &mut (u64, Vec<u64>, String)| -> bool {
        let a = arena_of(items, &offs);
        if a < best.0 {
            *best = (a, offs, name.to_string());
            true
        } else {
            false
        }
    };
    if worth(best.0) {
        let orders: [(&str, Vec<usize>); 5] = [
            ("greedy by lifetime length", sorted(items, |it| (it.span(), it.size, 0))),
            ("greedy by size x lifetime", sorted(items, |it| (it.size * it.span(), it.size, 0))),
            ("greedy by start step", sorted(items, |it| (u64::from(u32::MAX - it.start), it.size, 0))),
            ("greedy by end step", sorted(items, |it| (u64::from(it.end), it.size, 0))),
            (
                "greedy by size, long-lived first",
                sorted(items, |it| (u64::from(it.start == 0) + u64::from(it.end), it.size, 0)),
            ),
        ];
        for (name, order) in orders {
            if !worth(best.0) {
                break;
            }
            let offs = first_fit(&order);
            if consider(offs, name, &mut best) {
                best_order = order;
            }
        }
    }
    if worth(best.0) && n <= EXHAUSTIVE_MAX {
        let mut order: Vec<usize> = (0..n).collect();
        permute(&mut order, 0, &mut |o| {
            if best.0 > lb {
                let offs = first_fit(o);
                consider(offs, "every order (small instance)", &mut best);
            }
        });
    } else if worth(best.0) {
        // Local search over orders, from the best one: move a buffer that
        // touches the arena's top earlier, or swap two buffers; keep a
        // change that does not make the arena larger (walking plateaus),
        // remember the best. Seeded, so the result is deterministic.
        let mut rng = Rng(0x5EED_0FDE_9106);
        let (mut cur_order, mut cur_offs, mut cur_arena) = (best_order.clone(), best.1.clone(), best.0);
        let max_steps = (LOCAL_SEARCH_PLACEMENTS / n).max(LOCAL_SEARCH_STEPS);
        let mut since_best = 0;
        for _ in 0..max_steps {
            if !worth(best.0) || since_best == LOCAL_SEARCH_STEPS {
                break;
            }
            since_best += 1;
            let mut order = cur_order.clone();
            if rng.below(2) == 0 {
                let top: Vec<usize> = order
                    .iter()
                    .enumerate()
                    .filter(|(_, &i)| cur_offs[i] + items[i].size == cur_arena)
                    .map(|(p, _)| p)
                    .collect();
                let from = top[rng.below(top.len())];
                let to = rng.below(from + 1);
                let it = order.remove(from);
                order.insert(to, it);
            } else {
                let (i, j) = (rng.below(n), rng.below(n));
                order.swap(i, j);
            }
            let offs = first_fit(&order);
            let a = arena_of(items, &offs);
            if a <= cur_arena {
                (cur_order, cur_offs, cur_arena) = (order, offs.clone(), a);
                if consider(offs, "greedy + local search over orders", &mut best) {
                    since_best = 0;
                }
            }
        }
    }
    let (arena, offsets, strategy) = best;
    Assignment { offsets, arena, lower_bound: lb, greedy_arena, strategy }
}

fn permute(v: &mut Vec<usize>, k: usize, f: &mut impl FnMut(&[usize])) {
    if k == v.len() {
        f(v);
        return;
    }
    for i in k..v.len() {
        v.swap(k, i);
        permute(v, k + 1, f);
        v.swap(k, i);
    }
}

/// What [`verify`] found wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Two buffers live at a common step share bytes.
    Overlap {
        a: usize,
        b: usize,
    },
    /// A buffer ends past the arena.
    OutOfArena {
        item: usize,
        end: u64,
        arena: u64,
    },
    /// The arena exceeds the capacity.
    OverCapacity {
        arena: u64,
        capacity: u64,
    },
    Misaligned {
        item: usize,
        offset: u64,
        align: u64,
    },
    /// Offsets and items differ in number.
    Count {
        items: usize,
        offsets: usize,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Overlap { a, b } => write!(f, "buffers {a} and {b} are live at a common step and overlap"),
            Violation::OutOfArena { item, end, arena } => {
                write!(f, "buffer {item} ends at {end}, past the arena of {arena} B")
            }
            Violation::OverCapacity { arena, capacity } => {
                write!(f, "arena of {arena} B exceeds the capacity of {capacity} B")
            }
            Violation::Misaligned { item, offset, align } => {
                write!(f, "buffer {item} at offset {offset} is not {align}-byte aligned")
            }
            Violation::Count { items, offsets } => write!(f, "{items} buffers but {offsets} offsets"),
        }
    }
}

/// Check an assignment, whoever made it: every buffer inside `arena`, the
/// arena within `capacity`, offsets aligned, and no two buffers that are
/// live at a common step sharing a byte.
pub fn verify(items: &[Item], offsets: &[u64], arena: u64, capacity: u64, align: u64) -> Result<(), Violation> {
    if items.len() != offsets.len() {
        return Err(Violation::Count { items: items.len(), offsets: offsets.len() });
    }
    if arena > capacity {
        return Err(Violation::OverCapacity { arena, capacity });
    }
    for (i, (it, &o)) in items.iter().zip(offsets).enumerate() {
        let end = o.saturating_add(it.size);
        if end > arena {
            return Err(Violation::OutOfArena { item: i, end, arena });
        }
        if align > 1 && o % align != 0 {
            return Err(Violation::Misaligned { item: i, offset: o, align });
        }
    }
    // Sweep by start step, keeping the buffers still live ordered by offset.
    // They are all live at the current step, so (unless a violation was
    // found already) they are disjoint, and a new buffer overlaps one of
    // them only if it overlaps its neighbour below or above.
    let mut idx: Vec<usize> = (0..items.len()).filter(|&i| items[i].size > 0).collect();
    idx.sort_by_key(|&i| (items[i].start, i));
    let mut live: BTreeSet<(u64, usize)> = BTreeSet::new();
    let mut ends: BinaryHeap<Reverse<(u32, usize)>> = BinaryHeap::new();
    for &i in &idx {
        let it = items[i];
        while let Some(&Reverse((end, j))) = ends.peek() {
            if end >= it.start {
                break;
            }
            ends.pop();
            live.remove(&(offsets[j], j));
        }
        let (a0, a1) = (offsets[i], offsets[i].saturating_add(it.size));
        let below = live.range(..=(a0, usize::MAX)).next_back();
        let above = live.range((Bound::Excluded((a0, usize::MAX)), Bound::Unbounded)).next();
        for &(b0, j) in below.into_iter().chain(above) {
            if a0 < b0.saturating_add(items[j].size) && b0 < a1 {
                return Err(Violation::Overlap { a: j.min(i), b: j.max(i) });
            }
        }
        live.insert((a0, i));
        ends.push(Reverse((it.end, i)));
    }
    Ok(())
}
