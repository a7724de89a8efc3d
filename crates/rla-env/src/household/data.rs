//! ALFRED's tables used to generate scenes: receptacle counts per room kind, the objects each
//! room holds, which receptacle types can contain which object types, and object properties.
//! Read from `data/alfred.json`, which was tabulated from ALFWorld-generated games.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The tables.
#[derive(Debug, Deserialize)]
pub struct Alfred {
    /// Per room kind: receptacle type → `[min, max]` count, and the object types it holds.
    pub rooms: BTreeMap<String, RoomTable>,
    /// Receptacle type → object types it can contain.
    pub can_contain: BTreeMap<String, Vec<String>>,
    /// Object type → its properties (`pickupable`, `cleanable`, …).
    pub props: BTreeMap<String, Vec<String>>,
    /// Receptacle types that open and close.
    pub openable: Vec<String>,
    /// Receptacle types a lamp can stand on.
    pub lamp_holders: Vec<String>,
}

/// One room kind.
#[derive(Debug, Deserialize)]
pub struct RoomTable {
    /// Receptacle type → `[min, max]` count.
    pub receptacles: BTreeMap<String, [usize; 2]>,
    /// Object types found in this room kind.
    pub objects: Vec<String>,
}

impl Alfred {
    /// Whether receptacle type `r` can contain object type `o`.
    pub fn can_contain(&self, r: &str, o: &str) -> bool {
        self.can_contain
            .get(r)
            .is_some_and(|v| v.iter().any(|x| x == o))
    }

    /// Whether object type `o` has property `p`.
    pub fn has(&self, o: &str, p: &str) -> bool {
        self.props.get(o).is_some_and(|v| v.iter().any(|x| x == p))
    }

    /// Whether receptacle type `r` opens.
    pub fn is_openable(&self, r: &str) -> bool {
        self.openable.iter().any(|x| x == r)
    }
}

/// The tables, parsed once.
pub fn alfred() -> &'static Alfred {
    static T: OnceLock<Alfred> = OnceLock::new();
    T.get_or_init(|| {
        serde_json::from_str(include_str!("../../data/alfred.json"))
            .expect("bundled alfred.json is valid")
    })
}

/// ALFWorld's PDDL domain (`alfred.pddl`), verbatim.
pub const DOMAIN_PDDL: &str = include_str!("../../data/alfred.pddl");
/// ALFWorld's grammar (`alfred.twl2`), with `{TASK}` where the task sentence goes.
pub const GRAMMAR_TEMPLATE: &str = include_str!("../../data/alfred.twl2");
