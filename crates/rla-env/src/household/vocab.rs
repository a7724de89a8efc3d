//! The vocabulary that the world and its goals share: the kinds of entities, the entities
//! themselves, and the predicates of the ALFRED domain.

/// The PDDL types of the ALFRED domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `agent`
    Agent,
    /// `location`
    Location,
    /// `receptacle`
    Receptacle,
    /// `object`
    Object,
    /// `otype` / `rtype`
    Type,
}

impl Kind {
    /// The kind of a PDDL type name.
    pub fn from_type_name(s: &str) -> Option<Kind> {
        Some(match s.to_ascii_lowercase().as_str() {
            "agent" => Kind::Agent,
            "location" => Kind::Location,
            "receptacle" => Kind::Receptacle,
            "object" => Kind::Object,
            "otype" | "rtype" => Kind::Type,
            _ => return None,
        })
    }
}

/// An entity of the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ent {
    /// The one agent.
    Agent,
    /// A location index.
    Loc(u16),
    /// A receptacle index.
    Recep(u16),
    /// An object index.
    Obj(u16),
    /// A type index (object and receptacle types share one table).
    Type(u16),
}

impl Ent {
    /// The entity's kind.
    pub fn kind(self) -> Kind {
        match self {
            Ent::Agent => Kind::Agent,
            Ent::Loc(_) => Kind::Location,
            Ent::Recep(_) => Kind::Receptacle,
            Ent::Obj(_) => Kind::Object,
            Ent::Type(_) => Kind::Type,
        }
    }
}

/// Predicates of the ALFRED domain that goals may use.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pred {
    ObjectType,
    ReceptacleType,
    InReceptacle,
    Holds,
    HoldsAny,
    AtLocation,
    ReceptacleAtLocation,
    ObjectAtLocation,
    IsClean,
    IsHot,
    IsCool,
    IsSliced,
    IsToggled,
    IsOn,
    Cleanable,
    Heatable,
    Coolable,
    Sliceable,
    Toggleable,
    Pickupable,
    IsReceptacleObject,
    Openable,
    Opened,
    CanContain,
}

impl Pred {
    /// Parses a predicate name (case-insensitive).
    pub fn parse(s: &str) -> Option<Pred> {
        use Pred::*;
        Some(match s.to_ascii_lowercase().as_str() {
            "objecttype" => ObjectType,
            "receptacletype" => ReceptacleType,
            "inreceptacle" => InReceptacle,
            "holds" => Holds,
            "holdsany" => HoldsAny,
            "atlocation" => AtLocation,
            "receptacleatlocation" => ReceptacleAtLocation,
            "objectatlocation" => ObjectAtLocation,
            "isclean" => IsClean,
            "ishot" => IsHot,
            "iscool" => IsCool,
            "issliced" => IsSliced,
            "istoggled" => IsToggled,
            "ison" => IsOn,
            "cleanable" => Cleanable,
            "heatable" => Heatable,
            "coolable" => Coolable,
            "sliceable" => Sliceable,
            "toggleable" => Toggleable,
            "pickupable" => Pickupable,
            "isreceptacleobject" => IsReceptacleObject,
            "openable" => Openable,
            "opened" => Opened,
            "cancontain" => CanContain,
            _ => return None,
        })
    }

    /// Number of arguments.
    pub fn arity(self) -> usize {
        use Pred::*;
        match self {
            HoldsAny | IsClean | IsHot | IsCool | IsSliced | IsToggled | IsOn | Cleanable
            | Heatable | Coolable | Sliceable | Toggleable | Pickupable | IsReceptacleObject
            | Openable | Opened => 1,
            _ => 2,
        }
    }
}
