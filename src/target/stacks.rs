//! The cluster's stacks, sized from what the code needs.
//!
//! PulpOS and the GAP SDK put the cluster stacks in L1, next to the L1
//! arena: a stack too small overwrites the arena (or the next core's
//! stack) without a word. Every worker runs kernels, so its stack holds
//! the largest kernel's worst-case frames (`runtime/kernels/stack_usage.txt`,
//! measured on RV32 by `tests/it/stack_rv32.rs`); the core that runs the
//! network holds the network's own frames as well, and on Siracusa it is
//! worker 0, which runs its share of every fork on the same stack.

use super::{Platform, Reserved};

/// The kernels' worst-case stack bytes on RV32, one line per entry point.
const KERNEL_STACKS: &str = include_str!("../../runtime/kernels/stack_usage.txt");

/// Stack the controller's own code needs: a network's run function with
/// the runtime's tile and copy calls, the harness's tasks and its
/// printing. `tests/it/stack_rv32.rs` checks it on every zoo project.
pub const CONTROLLER_CODE_BYTES: u64 = 2048;

/// What the SDK's fork and barrier code and libc helpers (memcpy, the
/// soft-float routines) add below the measured frames.
pub const SDK_MARGIN_BYTES: u64 = 256;

/// Stacks are whole multiples of this.
const GRANULE: u64 = 256;

/// The stack bytes a generated project gives the cluster's cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stacks {
    /// A separate cluster controller's (GAP9's 9th core; `CC_STACK_SIZE`),
    /// 0 where the controller is worker 0.
    pub controller: u64,
    /// Worker 0's (`STACK_SIZE`): on Siracusa it runs the network too.
    pub master: u64,
    /// Every other worker's (`SLAVE_STACK_SIZE`).
    pub worker: u64,
}

/// `(kernel, bytes)` of the table.
pub fn kernel_stacks() -> impl Iterator<Item = (&'static str, u64)> {
    KERNEL_STACKS.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).map(|l| {
        let mut f = l.split_whitespace();
        let name = f.next().unwrap_or_default();
        let bytes = f.next().and_then(|b| b.parse().ok()).unwrap_or(u64::MAX);
        (name, bytes)
    })
}

/// The largest kernel's worst case.
pub fn kernel_max() -> u64 {
    kernel_stacks().map(|(_, b)| b).max().unwrap_or(0)
}

fn round(b: u64) -> u64 {
    b.div_ceil(GRANULE) * GRANULE
}

impl Platform {
    /// Whether a core outside the workers runs tasks sent without a fork.
    pub fn separate_controller(&self) -> bool {
        self.controller_core_id >= self.cluster_cores
    }

    pub fn stacks(&self) -> Stacks {
        let worker = round(kernel_max() + SDK_MARGIN_BYTES);
        let own = round(CONTROLLER_CODE_BYTES + SDK_MARGIN_BYTES);
        if self.separate_controller() {
            Stacks { controller: own, master: worker, worker }
        } else {
            Stacks { controller: 0, master: round(CONTROLLER_CODE_BYTES + kernel_max() + SDK_MARGIN_BYTES), worker }
        }
    }

    /// The stacks as L1 reservations, for chips whose SDK puts them in L1.
    pub(super) fn stack_reservations(&self) -> Vec<Reserved> {
        let s = self.stacks();
        let workers = self.cluster_cores.saturating_sub(1) as u64;
        let mut v = vec![];
        if s.controller > 0 {
            v.push(Reserved { name: "cluster-controller stack (CC_STACK_SIZE)".into(), bytes: s.controller });
        }
        v.push(Reserved { name: "core 0 stack (STACK_SIZE)".into(), bytes: s.master });
        v.push(Reserved {
            name: format!("{workers} worker stacks (SLAVE_STACK_SIZE {} each)", s.worker),
            bytes: workers * s.worker,
        });
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_line_parses() {
        assert!(kernel_stacks().count() > 50);
        assert!(kernel_stacks().all(|(n, b)| n.starts_with("dg_") && b < 1 << 20), "{KERNEL_STACKS}");
    }

    #[test]
    fn the_core_that_runs_the_network_holds_a_kernel_too_on_siracusa() {
        let s = Platform::by_name("Siracusa").unwrap().stacks();
        assert_eq!(s.controller, 0);
        assert!(s.master >= CONTROLLER_CODE_BYTES + kernel_max());
        let g = Platform::by_name("GAP9").unwrap().stacks();
        assert!(g.controller >= CONTROLLER_CODE_BYTES && g.master == g.worker);
        assert!(g.worker >= kernel_max() + SDK_MARGIN_BYTES);
    }
}
