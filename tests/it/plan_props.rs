//! Properties of the offset allocator, checked by the independent
//! verifier on random lifetime/size sets.

use deploygen::plan::offsets::{self, Item, Violation};
use proptest::prelude::*;

const ALIGN: u64 = 8;

fn items() -> impl Strategy<Value = Vec<Item>> {
    prop::collection::vec((0u64..512, 0u32..40, 0u32..16), 0..48)
        .prop_map(|v| v.into_iter().map(|(s, start, len)| Item::new(s * ALIGN, start, start + len)).collect())
}

/// Most bytes live at one step, by brute force over steps.
fn brute_lower_bound(items: &[Item]) -> u64 {
    let last = items.iter().map(|i| i.end).max().unwrap_or(0);
    (0..=last).map(|t| items.iter().filter(|i| i.start <= t && t <= i.end).map(|i| i.size).sum()).max().unwrap_or(0)
}

/// Pairs of buffers with bytes that share a step, by brute force.
fn brute_pairs(items: &[Item]) -> u64 {
    let full: Vec<&Item> = items.iter().filter(|i| i.size > 0).collect();
    let mut n = 0;
    for (k, a) in full.iter().enumerate() {
        n += full[k + 1..].iter().filter(|b| a.conflicts(b)).count() as u64;
    }
    n
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_sweep_is_valid_and_counts_the_pairs(items in items()) {
        let (offs, pairs) = offsets::sweep(&items, ALIGN);
        let arena = offsets::arena_of(&items, &offs);
        prop_assert_eq!(offsets::verify(&items, &offs, arena, arena, ALIGN), Ok(()));
        prop_assert!(arena <= offsets::arena_of(&items, &offsets::bump(&items)));
        prop_assert!(arena >= offsets::lower_bound(&items));
        prop_assert_eq!(pairs, brute_pairs(&items));
    }


    #[test]
    fn assignment_is_valid_and_between_the_bounds(items in items()) {
        let a = offsets::assign(&items, ALIGN);
        let bump_arena = offsets::arena_of(&items, &offsets::bump(&items));
        prop_assert_eq!(offsets::verify(&items, &a.offsets, a.arena, a.arena, ALIGN), Ok(()));
        prop_assert_eq!(a.arena, offsets::arena_of(&items, &a.offsets));
        prop_assert_eq!(a.lower_bound, brute_lower_bound(&items));
        prop_assert!(a.arena >= a.lower_bound, "arena {} below the lower bound {}", a.arena, a.lower_bound);
        // Greedy never worse than the naive bump allocator; the search never
        // worse than greedy.
        prop_assert!(a.greedy_arena <= bump_arena, "greedy {} > bump {}", a.greedy_arena, bump_arena);
        prop_assert!(a.arena <= a.greedy_arena);
        prop_assert!(a.efficiency() <= 1.0 + 1e-12);
    }

    #[test]
    fn first_fit_in_any_order_is_valid(items in items(), seed in any::<u64>()) {
        let mut order: Vec<usize> = (0..items.len()).collect();
        // A seeded shuffle.
        let mut s = seed | 1;
        for i in (1..order.len()).rev() {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            order.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let offs = offsets::first_fit(&items, &order, ALIGN);
        let arena = offsets::arena_of(&items, &offs);
        prop_assert_eq!(offsets::verify(&items, &offs, arena, arena, ALIGN), Ok(()));
        prop_assert!(arena <= offsets::arena_of(&items, &offsets::bump(&items)));
    }

    #[test]
    fn the_verifier_rejects_overlap(items in items(), pick in any::<(usize, usize)>()) {
        let a = offsets::assign(&items, ALIGN);
        // Two distinct non-empty buffers live at a common step, put on top of each other.
        let pairs: Vec<(usize, usize)> = (0..items.len())
            .flat_map(|i| (0..items.len()).map(move |j| (i, j)))
            .filter(|&(i, j)| i < j && items[i].size > 0 && items[j].size > 0 && items[i].conflicts(&items[j]))
            .collect();
        prop_assume!(!pairs.is_empty());
        let (i, j) = pairs[pick.0 % pairs.len()];
        let mut offs = a.offsets.clone();
        offs[j] = offs[i];
        let arena = offsets::arena_of(&items, &offs).max(a.arena);
        let got = offsets::verify(&items, &offs, arena, arena, ALIGN);
        prop_assert!(matches!(got, Err(Violation::Overlap { .. })), "{:?}", got);
    }

    #[test]
    fn the_verifier_rejects_overflow(items in items()) {
        let a = offsets::assign(&items, ALIGN);
        prop_assume!(a.arena > 0);
        let over = offsets::verify(&items, &a.offsets, a.arena, a.arena - 1, ALIGN);
        prop_assert!(matches!(over, Err(Violation::OverCapacity { .. })), "{:?}", over);
        let out = offsets::verify(&items, &a.offsets, a.arena - 1, u64::MAX, ALIGN);
        prop_assert!(matches!(out, Err(Violation::OutOfArena { .. })), "{:?}", out);
    }
}

/// Disjoint lifetimes share one range; the arena is the largest buffer.
#[test]
fn disjoint_lifetimes_share_memory() {
    let items = vec![Item::new(800, 0, 1), Item::new(400, 2, 3), Item::new(1200, 4, 4)];
    let a = offsets::assign(&items, ALIGN);
    assert_eq!(a.arena, 1200);
    assert_eq!(a.offsets, vec![0, 0, 0]);
}

/// Greedy by size is not optimal here; the order search finds the optimum
/// (the lower bound).
#[test]
fn the_search_beats_greedy_by_size() {
    // Found by random search: greedy by size needs 56 B, the optimum is 40.
    let items =
        vec![Item::new(24, 3, 3), Item::new(16, 0, 1), Item::new(8, 1, 2), Item::new(16, 2, 3), Item::new(16, 1, 2)];
    let a = offsets::assign(&items, ALIGN);
    assert_eq!(a.lower_bound, 40);
    assert_eq!(a.greedy_arena, 56);
    assert!(a.greedy_arena > a.arena, "greedy {} search {}", a.greedy_arena, a.arena);
    assert_eq!(a.arena, a.lower_bound);
    assert_eq!(offsets::verify(&items, &a.offsets, a.arena, a.arena, ALIGN), Ok(()));
}

/// A large instance: the local search (not only the fixed orders) must
/// close the gap greedy by size leaves.
#[test]
fn the_local_search_closes_the_gap_on_a_larger_instance() {
    // Staircase of lifetimes where large buffers block the gaps small ones leave.
    let mut items = vec![];
    for k in 0..30u32 {
        items.push(Item::new(8 * (1 + u64::from(k % 7)), k, k + 3));
        items.push(Item::new(8 * (8 - u64::from(k % 5)), k + 1, k + 2));
    }
    let a = offsets::assign(&items, ALIGN);
    assert_eq!(offsets::verify(&items, &a.offsets, a.arena, a.arena, ALIGN), Ok(()));
    println!("lower bound {} greedy {} search {} ({})", a.lower_bound, a.greedy_arena, a.arena, a.strategy);
    assert!(a.arena <= a.greedy_arena);
    assert!(a.efficiency() >= 0.98, "{}", a.efficiency());
}

#[test]
fn zero_size_and_empty_instances() {
    let a = offsets::assign(&[], ALIGN);
    assert_eq!((a.arena, a.lower_bound), (0, 0));
    assert_eq!(a.efficiency(), 1.0);
    let items = vec![Item::new(0, 0, 5), Item::new(8, 2, 2)];
    let a = offsets::assign(&items, ALIGN);
    assert_eq!(a.arena, 8);
    assert_eq!(offsets::verify(&items, &a.offsets, a.arena, a.arena, ALIGN), Ok(()));
}

/// A training step's shape: values made one after another and read back
/// in reverse, so the first made lives longest. Past `GREEDY_PAIRS` pairs
/// live together the greedy search (quadratic in them) gives way to the
/// sweep, which packs this nesting exactly and at once.
#[test]
fn a_long_nested_step_is_placed_by_the_sweep() {
    let n: u32 = 6500;
    let items: Vec<Item> = (0..n).map(|k| Item::new(8 * (1 + u64::from(k % 3)), k, 2 * n - k)).collect();
    assert!(brute_pairs(&items[..100]) == 100 * 99 / 2);
    let a = offsets::assign(&items, ALIGN);
    assert!(a.strategy.starts_with("sweep by first step"), "{}", a.strategy);
    assert_eq!(a.arena, a.lower_bound);
    assert_eq!(offsets::verify(&items, &a.offsets, a.arena, a.arena, ALIGN), Ok(()));
    // Below the bound the greedy search still runs.
    let few = offsets::assign(&items[..100], ALIGN);
    assert!(!few.strategy.starts_with("sweep"), "{}", few.strategy);
}

/// Buffers freed in the order they were made (a sliding window of live
/// values, sizes irregular): the sweep reuses what each frees, merged with
/// its free neighbours, and stays close to the bound.
#[test]
fn the_sweep_reuses_freed_ranges() {
    let items: Vec<Item> = (0..2000u32).map(|k| Item::new(8 * (1 + u64::from(k * k % 11)), k, k + 16)).collect();
    let (offs, _) = offsets::sweep(&items, ALIGN);
    let arena = offsets::arena_of(&items, &offs);
    let lb = offsets::lower_bound(&items);
    println!("lower bound {lb} sweep {arena}");
    assert_eq!(offsets::verify(&items, &offs, arena, arena, ALIGN), Ok(()));
    assert!(arena * 4 <= lb * 5, "sweep {arena} against the bound {lb}");
}
