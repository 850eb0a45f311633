//! Platform descriptors. The chips are data (`platforms.json`), not code: a
//! new chip is a new entry. Capacities can be overridden per run
//! (`--l1`, `--l2`, `--l3`).

mod stacks;

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{Error, Result};

pub use stacks::{kernel_max, kernel_stacks, Stacks, CONTROLLER_CODE_BYTES, SDK_MARGIN_BYTES};

/// A memory level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Level {
    L1,
    L2,
    L3,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::L1, Level::L2, Level::L3];

    pub fn name(self) -> &'static str {
        match self {
            Level::L1 => "L1",
            Level::L2 => "L2",
            Level::L3 => "L3",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    /// `L2`, `l2`, `2`.
    pub fn parse(s: &str) -> Option<Level> {
        match s.trim().to_ascii_uppercase().as_str() {
            "L1" | "1" => Some(Level::L1),
            "L2" | "2" => Some(Level::L2),
            "L3" | "3" => Some(Level::L3),
            _ => None,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A byte count or address written as a number or as a `"0x…"` string.
fn bytes<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum N {
        Num(u64),
        Str(String),
    }
    match N::deserialize(d)? {
        N::Num(n) => Ok(n),
        N::Str(s) => parse_bytes(&s).ok_or_else(|| serde::de::Error::custom(format!("not a byte count: {s}"))),
    }
}

fn window<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<[u64; 2]>, D::Error> {
    let v: Option<[String; 2]> = Option::deserialize(d)?;
    v.map(|[a, b]| match (parse_bytes(&a), parse_bytes(&b)) {
        (Some(a), Some(b)) => Ok([a, b]),
        _ => Err(serde::de::Error::custom(format!("not an address window: [{a}, {b}]"))),
    })
    .transpose()
}

/// `1638400`, `0x190000`, `1_638_400`.
pub fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim().replace('_', "");
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Memory set aside at a level before any buffer is planned (stacks, the
/// program image).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Reserved {
    pub name: String,
    pub bytes: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LevelDesc {
    pub level: Level,
    #[serde(deserialize_with = "bytes")]
    pub capacity: u64,
    /// Address range `[start, end)` of the level, where the chip has one.
    #[serde(default, deserialize_with = "window", skip_serializing_if = "Option::is_none")]
    pub window: Option<[u64; 2]>,
    #[serde(default)]
    pub note: String,
    #[serde(default)]
    pub reserved: Vec<Reserved>,
    /// Largest initialised image (baked `.data`) the level may hold, where
    /// the chip limits it separately from the capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_limit: Option<u64>,
}

impl LevelDesc {
    pub fn reserved_bytes(&self) -> u64 {
        self.reserved.iter().map(|r| r.bytes).sum()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Platform {
    pub name: String,
    #[serde(default, skip_serializing)]
    pub aliases: Vec<String>,
    /// Cluster worker cores.
    pub cluster_cores: u32,
    /// Whether the core count is a build option (host) rather than silicon.
    #[serde(default)]
    pub cores_configurable: bool,
    /// `pi_core_id()` of the core that runs a cluster task sent without a
    /// fork (8 on GAP9, 0 on Siracusa).
    pub controller_core_id: u32,
    #[serde(default)]
    pub controller_note: String,
    /// Most cluster-RAM (L3) requests the runtime may have in flight at
    /// once; 0: no limit.
    #[serde(default, skip_serializing)]
    pub ram_requests_in_flight: u32,
    #[serde(default, skip_serializing)]
    pub ram_note: String,
    /// Whether the board's RAM and flash are HyperBus devices (HyperRAM,
    /// HyperFlash) rather than the SDK's default ones: `dg_mem.c` opens
    /// them with their own drivers.
    #[serde(default, skip_serializing)]
    pub hyperbus_memory: bool,
    #[serde(default, skip_serializing)]
    pub hyperbus_note: String,
    /// Whether cores i and i + 4 of the cluster share one FPU: the matrix
    /// tiles then pace their multiply-adds (`linear.c`).
    #[serde(default, skip_serializing)]
    pub fpu_shared_by_core_pairs: bool,
    #[serde(default, skip_serializing)]
    pub fpu_note: String,
    /// Every buffer offset and size is a multiple of this.
    pub alignment: u64,
    /// L1, L2, L3 in this order.
    pub levels: Vec<LevelDesc>,
    /// The C define that selects this platform's code paths in the runtime
    /// and the harness (`DG_PLATFORM_GAP9`, …).
    #[serde(skip_serializing)]
    pub c_define: String,
    /// The SDK build file generated beside `Makefile.host`.
    #[serde(default, skip_serializing)]
    pub sdk_build: SdkBuild,
    /// Whether the cluster cores run Xpulpv2's packed 4 x 8-bit dot
    /// products: the SDK build then defines `DG_XPULP` (the int8 kernels'
    /// inner loops).
    #[serde(default, skip_serializing)]
    pub xpulp: bool,
}

/// Which SDK build file a project for the platform carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SdkBuild {
    /// None: the host build (`Makefile.host`) is the only one.
    #[default]
    None,
    /// A `Makefile` for the PULP SDK's `pulp_rules.mk`.
    PulpMake,
    /// A `CMakeLists.txt` for the GAP SDK.
    GapCmake,
}

#[derive(Deserialize)]
struct File {
    platforms: Vec<Platform>,
}

const DATA: &str = include_str!("platforms.json");

impl Platform {
    /// Whether projects for the platform run on the build machine (the
    /// host build is their only build).
    pub fn runs_here(&self) -> bool {
        self.sdk_build == SdkBuild::None
    }

    /// Every platform in the data file.
    pub fn all() -> Vec<Platform> {
        let file: File = serde_json::from_str(DATA).expect("src/plan/platforms.json is valid (tested)");
        // The chips' SDKs put the cluster stacks in L1 (the host emulation
        // runs them on its threads' own).
        file.platforms
            .into_iter()
            .map(|mut p| {
                if !p.runs_here() {
                    let r = p.stack_reservations();
                    p.level_mut(Level::L1).reserved.splice(0..0, r);
                }
                p
            })
            .collect()
    }

    /// Look a platform up by name or alias (case-insensitive).
    pub fn by_name(name: &str) -> Result<Platform> {
        let all = Self::all();
        let want = name.trim().to_ascii_lowercase();
        let found = all
            .iter()
            .find(|p| p.name.to_ascii_lowercase() == want || p.aliases.iter().any(|a| a.to_ascii_lowercase() == want));
        match found {
            Some(p) => Ok(p.clone()),
            None => Err(Error::Usage(format!(
                "unknown platform '{name}': known platforms are {}",
                all.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    pub fn level(&self, l: Level) -> &LevelDesc {
        self.levels.iter().find(|d| d.level == l).expect("every platform describes L1, L2 and L3 (tested)")
    }

    fn level_mut(&mut self, l: Level) -> &mut LevelDesc {
        self.levels.iter_mut().find(|d| d.level == l).expect("every platform describes L1, L2 and L3 (tested)")
    }

    pub fn capacity(&self, l: Level) -> u64 {
        self.level(l).capacity
    }

    /// Capacity minus what is reserved (stacks, program image); 0 when the
    /// reservations alone exceed the capacity.
    pub fn budget(&self, l: Level) -> u64 {
        let d = self.level(l);
        d.capacity.saturating_sub(d.reserved_bytes())
    }

    /// Override a level's capacity (`--l1`, `--l2`, `--l3`). The address
    /// window, where there is one, is resized to match.
    pub fn with_capacity(mut self, l: Level, bytes: u64) -> Platform {
        let d = self.level_mut(l);
        d.capacity = bytes;
        if let Some(w) = &mut d.window {
            w[1] = w[0].saturating_add(bytes);
        }
        self
    }

    /// Check the descriptor makes sense: all three levels, non-zero
    /// alignment that is a power of two.
    pub fn validate(&self) -> Result<()> {
        for l in Level::ALL {
            if !self.levels.iter().any(|d| d.level == l) {
                return Err(Error::Usage(format!("platform {} does not describe level {l}", self.name)));
            }
        }
        if !self.alignment.is_power_of_two() {
            return Err(Error::Usage(format!(
                "platform {}: alignment {} is not a power of two",
                self.name, self.alignment
            )));
        }
        Ok(())
    }
}

/// `runtime/mem/dg_chips.h`: each platform's facts for the C runtime —
/// controller core id, cores, RAM requests in flight, HyperBus memory, an
/// FPU shared by core pairs, every level's size and address window —
/// selected by its define; no define (or another) is an `#error`. The
/// runtime reads these and nothing else, so the chips are described once,
/// in `platforms.json`; `tests/it/plan.rs` checks the committed file.
pub fn chips_header() -> String {
    let mut s = String::from(
        "/*\n * dg_chips.h: the chips' facts, written by deploygen from its\n * src/target/platforms.json \
         (do not edit; `UPDATE_GOLDEN=1 cargo test --test\n * plan` rewrites it). Compile with the \
         define of one platform.\n */\n#ifndef DG_CHIPS_H\n#define DG_CHIPS_H\n\n",
    );
    let all = Platform::all();
    for (i, p) in all.iter().enumerate() {
        s.push_str(&format!("#{} defined({})\n", if i == 0 { "if" } else { "elif" }, p.c_define));
        s.push_str(&format!("#define DG_CHIP_NAME \"{}\"\n", p.name));
        s.push_str(&format!("#define DG_CHIP_CONTROLLER_CORE_ID {}u\n", p.controller_core_id));
        s.push_str(&format!("#define DG_CHIP_CLUSTER_CORES {}u\n", p.cluster_cores));
        if p.ram_requests_in_flight > 0 {
            s.push_str(&format!("#define DG_CHIP_RAM_REQS_IN_FLIGHT {}u\n", p.ram_requests_in_flight));
        }
        if p.hyperbus_memory {
            s.push_str("#define DG_CHIP_HYPERBUS_MEMORY 1\n");
        }
        if p.fpu_shared_by_core_pairs {
            s.push_str("#define DG_CHIP_FPU_SHARED_BY_CORE_PAIRS 1\n");
        }
        for l in Level::ALL {
            let d = p.level(l);
            s.push_str(&format!("#define DG_CHIP_{l}_SIZE {}u\n", d.capacity));
            if let Some([a, b]) = d.window {
                s.push_str(&format!("#define DG_CHIP_{l}_BASE 0x{a:08X}u\n#define DG_CHIP_{l}_END 0x{b:08X}u\n"));
            }
        }
    }
    let defines: Vec<String> = all.iter().map(|p| format!("-D{}", p.c_define)).collect();
    s.push_str(&format!(
        "#else\n#error \"no platform selected: compile with one of {}\"\n#endif\n\n#endif /* DG_CHIPS_H */\n",
        defines.join(", ")
    ));
    s
}
