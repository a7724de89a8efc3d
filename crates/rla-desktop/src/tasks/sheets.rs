//! The sheets world: tasks drawn as OSWorld's Calc tasks differ from the plain sheet. Tables lie
//! anywhere (title rows, blank rows, a note beside them), hold 2–8 numeric columns and up to 30
//! rows; headers come from one shared pool (multi-word ones included), so any name can be a
//! source column or a new one; instructions are paraphrased over several templates a family,
//! most naming no column letter and none a row number; a new column sometimes goes one blank
//! column right of the table. The held-out world (the OOD split) draws its names, layouts and
//! paraphrases from pools the others never use.

use rand::seq::SliceRandom;
use rand::Rng;

/// Which pools a task draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pools {
    /// Training, in-domain and validation tasks.
    Seen,
    /// The OOD split: names, layouts and paraphrases never trained on.
    HeldOut,
}

/// Numeric headers, shared by source and new columns.
const SEEN_NAMES: [&str; 36] = [
    "Revenue",
    "Cost",
    "Units",
    "Price",
    "Tax",
    "Budget",
    "Profit",
    "Margin",
    "Net",
    "Score",
    "Gain",
    "Amount",
    "Sales",
    "COGS",
    "Orders",
    "Returns",
    "Stock",
    "Weight",
    "Hours",
    "Fees",
    "Discount",
    "Gross profit",
    "Unit price",
    "Net sales",
    "Shipping cost",
    "Total cost",
    "Online sales",
    "Store sales",
    "Visitors",
    "Clicks",
    "Refunds",
    "Bonus",
    "Salary",
    "Rent",
    "Expenses",
    "Deposits",
];
const HELD_OUT_NAMES: [&str; 14] = [
    "Freight",
    "Commission",
    "Interest",
    "Payroll",
    "Overhead",
    "Net income",
    "Operating cost",
    "List price",
    "Yield",
    "Premium",
    "Rebates",
    "Duty",
    "Capacity",
    "Backlog",
];

/// Key columns: a header and the values of its rows.
const SEEN_KEYS: [(&str, &[&str]); 6] = [
    (
        "Region",
        &[
            "north", "south", "east", "west", "central", "coast", "hills",
        ],
    ),
    (
        "Product",
        &["tea", "coffee", "juice", "water", "cocoa", "milk", "soda"],
    ),
    (
        "Store",
        &["Leeds", "Paris", "Lyon", "Turin", "Graz", "Bern", "Oslo"],
    ),
    (
        "Team",
        &["red", "blue", "green", "gold", "gray", "teal", "pink"],
    ),
    (
        "Month",
        &[
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ],
    ),
    (
        "Invoice No.",
        &[
            "INV-101", "INV-102", "INV-103", "INV-104", "INV-105", "INV-106", "INV-107", "INV-108",
        ],
    ),
];
const HELD_OUT_KEYS: [(&str, &[&str]); 2] = [
    (
        "Supplier",
        &["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay"],
    ),
    (
        "Warehouse",
        &["W-01", "W-02", "W-03", "W-04", "W-05", "W-06", "W-07"],
    ),
];

const TITLES: [&str; 6] = [
    "Quarterly figures",
    "Sales report",
    "Summary",
    "Figures by line",
    "Budget review",
    "Monthly numbers",
];
const NOTES: [&str; 4] = ["Source: ledger", "Draft", "Checked", "Figures rounded"];
const SHEET_NAMES: [&str; 5] = ["Sheet2", "Summary", "Extract", "Selection", "Report"];

/// The table's shape and place, and how its instruction is worded, drawn for a seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draw {
    /// The header row (0-based).
    pub top: u32,
    /// The key column (0-based).
    pub left: u32,
    /// A title two rows above the header.
    pub title: Option<&'static str>,
    /// A note right of the table and its new columns.
    pub note: Option<&'static str>,
    /// Numeric columns, 2–8.
    pub numeric: usize,
    /// Data rows, 3–30.
    pub rows: usize,
    /// The key column's header and values.
    pub key: (&'static str, &'static [&'static str]),
    /// The numeric headers, then the new columns' names (one pool, shuffled; distinct).
    pub names: Vec<&'static str>,
    /// Whether the instruction names column letters.
    pub located: bool,
    /// Blank columns between the table and its first new column (0 or 1).
    pub gap: u32,
    /// The paraphrase drawn (an index into the family's templates).
    pub template: usize,
    /// The new sheet's name.
    pub sheet: &'static str,
}

/// Draws a task's table and wording.
pub fn draw(rng: &mut impl Rng, pools: Pools) -> Draw {
    let held = pools == Pools::HeldOut;
    let title = (rng.gen::<f64>() < 0.35).then(|| *TITLES.choose(rng).expect("titles"));
    let top = match (held, title.is_some()) {
        (true, _) => rng.gen_range(4..=8),
        (false, true) => 2 + rng.gen_range(0..=2),
        (false, false) => {
            if rng.gen::<f64>() < 0.4 {
                0
            } else {
                rng.gen_range(1..=3)
            }
        }
    };
    // a held-out title may not fit above a low header
    let title = title.filter(|_| top >= 2);
    let left = if held {
        rng.gen_range(3..=6)
    } else if rng.gen::<f64>() < 0.5 {
        0
    } else {
        rng.gen_range(1..=3)
    };
    let note = (rng.gen::<f64>() < 0.2).then(|| *NOTES.choose(rng).expect("notes"));
    let numeric = *[2, 3, 3, 3, 4, 4, 4, 5, 5, 6, 7, 8]
        .choose(rng)
        .expect("counts");
    let rows = match rng.gen_range(0..10) {
        0..=5 => rng.gen_range(3..=8),
        6..=8 => rng.gen_range(9..=16),
        _ => rng.gen_range(17..=30),
    };
    let keys: &[(&str, &[&str])] = if held { &HELD_OUT_KEYS } else { &SEEN_KEYS };
    let key = *keys.choose(rng).expect("keys");
    let pool: &[&str] = if held { &HELD_OUT_NAMES } else { &SEEN_NAMES };
    let mut names: Vec<&'static str> = pool.to_vec();
    names.shuffle(rng);
    let located = rng.gen::<f64>() < 0.2;
    let gap = u32::from(rng.gen::<f64>() < 0.15);
    let template = rng.gen_range(0..TEMPLATES);
    let sheet = *SHEET_NAMES.choose(rng).expect("sheet names");
    Draw {
        top,
        left,
        title,
        note,
        numeric,
        rows,
        key,
        names,
        located,
        gap,
        template,
        sheet,
    }
}

/// Paraphrases a family's wording draws among (seen ones first, then held-out ones).
pub const TEMPLATES: usize = 4;

/// A family's sentence for the drawn paraphrase: seen tasks use the first four of a list, held-out
/// ones the last two.
pub fn pick<'a>(list: &[&'a str], template: usize, pools: Pools) -> &'a str {
    match pools {
        Pools::Seen => list[template % (list.len() - 2)],
        Pools::HeldOut => list[list.len() - 2 + template % 2],
    }
}

/// Fills a template's `{NAME}` slots.
pub fn fill(template: &str, slots: &[(&str, &str)]) -> String {
    let mut s = template.to_string();
    for (k, v) in slots {
        s = s.replace(&format!("{{{k}}}"), v);
    }
    s
}

/// Computed columns: `{WHAT}` (e.g. `Profit = Revenue - Cost`, or several joined).
pub const COMPUTED: [&str; 6] = [
    "Add {A_COLUMN} {WHAT} for every row{WHERE}.",
    "Create {NEW_COLUMNS} holding {WHAT} on each row{WHERE}.",
    "For each row of the table, compute {WHAT} in {NEW_COLUMNS}{WHERE}.",
    "Put {WHAT} in {NEW_COLUMNS} next to the table{WHERE}, row by row.",
    "Each row needs {WHAT}; add {NEW_COLUMNS} for it{WHERE}.",
    "Extend the table with {WHAT}, computed on every row{WHERE}.",
];
/// A total row under a computed column.
pub const COMPUTED_TOTAL: [&str; 6] = [
    " Then add a row called Total under the table with the total of {NAME}.",
    " Then, in a new row under the table, write Total in its first column and the sum of {NAME} under it.",
    " Finally add a Total row below the data holding the sum of {NAME}.",
    " Below the last row, add a Total row with {NAME}'s total.",
    " Close the table with a Total row summing {NAME}.",
    " Then total {NAME} in a new Total row at the bottom.",
];
/// An aggregate row: `{LABEL}` (Total, Average, Maximum, Count), `{F}` (the sum, the average,
/// …), `{COLUMNS}`, `{UNDER}`.
pub const AGGREGATE: [&str; 6] = [
    "Add a row called {LABEL} under the table with the {F} of {COLUMNS} {UNDER}.",
    "In a new row under the table, write {LABEL} in its first column and the {F} of {COLUMNS} {UNDER}.",
    "Below the last row of the table, add a {LABEL} row holding the {F} of {COLUMNS} {UNDER}.",
    "Append a {LABEL} row to the table: the {F} of {COLUMNS}, {UNDER}.",
    "Summarise {COLUMNS} in a new {LABEL} row beneath the data ({F}, {UNDER}).",
    "Give the table a {LABEL} row at the bottom with the {F} of {COLUMNS} {UNDER}.",
];
/// A second aggregate row.
pub const AGGREGATE_AGAIN: [&str; 6] = [
    " Then add a {LABEL} row below it with the {F} of the same columns.",
    " Then, in the row below that, write {LABEL} in the first column and the {F} of the same columns under them.",
    " Under that row, add {LABEL}: the {F} of the same columns.",
    " Follow it with a {LABEL} row holding the {F} of the same columns.",
    " Below it, a {LABEL} row with the {F} of the same columns.",
    " Then put the {F} of the same columns in a {LABEL} row under it.",
];
/// A copy: `{WHAT}` (the X column, the X and Y columns), `{SHEET}`.
pub const COPY: [&str; 6] = [
    "Copy {WHAT} to a new sheet named {SHEET}{WHERE}.",
    "Make a new sheet called {SHEET} holding a copy of {WHAT}{WHERE}.",
    "Duplicate {WHAT} onto a new sheet, {SHEET}{WHERE}.",
    "Create a sheet {SHEET} and copy {WHAT} into it{WHERE}.",
    "Put a copy of {WHAT} on a new {SHEET} sheet{WHERE}.",
    "Add a sheet named {SHEET} that repeats {WHAT}{WHERE}.",
];
/// The rename after a copy.
pub const RENAME: [&str; 6] = [
    ", then rename the copied {OLD} header to {NEW}",
    ", and call the copied {OLD} column {NEW} there",
    "; there, rename {OLD} to {NEW}",
    ", then retitle the {OLD} copy as {NEW}",
    ", giving the copied {OLD} header the name {NEW}",
    ", then relabel the copied {OLD} as {NEW}",
];
/// A sort: `{KEY}`, `{DIR}` (ascending, descending).
pub const SORT: [&str; 6] = [
    "Sort the table by {KEY} in {DIR} order, keeping the header row at the top.",
    "Order the rows of the table by {KEY}, {DIR}, with the header row staying first.",
    "Rearrange the table so that {KEY} runs in {DIR} order (the header stays on top).",
    "Sort the data rows by {KEY} ({DIR}).",
    "Reorder the table's rows by their {KEY}, {DIR}; keep the headers where they are.",
    "Put the rows in {DIR} order of {KEY}, header row first.",
];
/// The copy after a sort: `{KEY}` (the key column's header), `{SHEET}`.
pub const SORT_COPY: [&str; 6] = [
    " Then copy the sorted {KEY} column to a new sheet named {SHEET}.",
    " Then make a sheet {SHEET} holding the sorted {KEY} column.",
    " Afterwards, copy the {KEY} column as sorted onto a new sheet {SHEET}.",
    " Then duplicate the sorted {KEY} column on a new sheet called {SHEET}.",
    " Then put the sorted {KEY} column on a new sheet, {SHEET}.",
    " Finally copy the reordered {KEY} column to a sheet named {SHEET}.",
];

/// A task's numeric column headers and its new columns' names: the first `numeric` names of the
/// shuffled pool are the table's, the next ones name new columns.
pub fn split_names(d: &Draw, new: usize) -> (Vec<String>, Vec<String>) {
    let names: Vec<String> = d.names.iter().map(|s| s.to_string()).collect();
    let (a, b) = names.split_at(d.numeric.min(names.len()));
    (a.to_vec(), b.iter().take(new).cloned().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn draws_cover_the_layouts_and_keep_held_out_pools_apart() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let seen: Vec<Draw> = (0..400).map(|_| draw(&mut rng, Pools::Seen)).collect();
        let held: Vec<Draw> = (0..200).map(|_| draw(&mut rng, Pools::HeldOut)).collect();
        assert!(seen.iter().any(|d| d.top == 0 && d.left == 0));
        assert!(seen.iter().any(|d| d.title.is_some()));
        assert!(seen.iter().any(|d| d.numeric == 2) && seen.iter().any(|d| d.numeric == 8));
        assert!(seen.iter().any(|d| d.rows > 16));
        let located = seen.iter().filter(|d| d.located).count();
        assert!(located < 400 / 4, "{located} located of 400");
        for d in &held {
            assert!(d.top >= 4 && d.left >= 3);
            assert!(d.names.iter().all(|n| HELD_OUT_NAMES.contains(n)));
        }
        for d in &seen {
            assert!(d.names.iter().all(|n| SEEN_NAMES.contains(n)));
            assert!(!HELD_OUT_KEYS.iter().any(|k| k.0 == d.key.0));
        }
        // paraphrases: seen tasks never use the held-out two
        for t in 0..TEMPLATES {
            assert_ne!(pick(&COMPUTED, t, Pools::Seen), COMPUTED[4]);
            assert_ne!(pick(&COMPUTED, t, Pools::Seen), COMPUTED[5]);
            assert!(COMPUTED[4..].contains(&pick(&COMPUTED, t, Pools::HeldOut)));
        }
    }
}
