//! OSWorld's accessibility XML (`GET /accessibility` → `{"AT": xml}`) read into the desktop's
//! [`Node`]s: every element with a screen position ([`all`], what the expert's steps are mapped
//! on), or the nodes an OSWorld agent is shown ([`agent_view`]): showing and visible, enabled,
//! editable, expandable or checkable, of an interactive or text-bearing role, with a name or a
//! text and a positive size. Class and description are empty, as on OSWorld's Ubuntu VMs.

use crate::ui::a11y::Node;
use crate::ui::layout::Rect;
use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use std::borrow::Cow;

/// One element of the XML, with the states the filter reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    /// The node.
    pub node: Node,
    /// `st:showing` and `st:visible`.
    pub showing: bool,
    /// `st:enabled`, `st:editable`, `st:expandable` or `st:checkable`.
    pub usable: bool,
    /// `st:selected` (the current sheet's tab).
    pub selected: bool,
    /// `st:focused` (the text being typed into).
    pub focused: bool,
    /// Its depth in the XML.
    pub depth: usize,
}

fn pair(v: &str) -> Option<(i32, i32)> {
    let v = v.trim().strip_prefix('(')?.strip_suffix(')')?;
    let (a, b) = v.split_once(',')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

fn element(e: &BytesStart, depth: usize) -> Result<Option<Element>, String> {
    let tag = e.local_name().into_inner().to_string();
    let (mut name, mut pos, mut size) = (String::new(), None, None);
    let (mut showing, mut visible, mut usable) = (false, false, false);
    let (mut selected, mut focused) = (false, false);
    for a in e.attributes() {
        let a = a.map_err(|err| format!("<{tag}>: an attribute does not parse: {err}"))?;
        let prefix = a.key.prefix().map(|p| p.into_inner().to_string());
        let local = a.key.local_name().into_inner().to_string();
        let value = a
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|err| format!("<{tag} {local}>: {err}"))?
            .into_owned();
        match (prefix.as_deref(), local.as_str()) {
            (None, "name") => name = value,
            (Some("attr"), _) => {}
            (Some(_), "screencoord") => pos = pair(&value),
            (Some(_), "size") => size = pair(&value),
            (Some(_), "showing") => showing = value == "true",
            (Some(_), "visible") => visible = value == "true",
            (Some(_), "selected") => selected = value == "true",
            (Some(_), "focused") => focused = value == "true",
            (Some(_), "enabled" | "editable" | "expandable" | "checkable") => {
                usable |= value == "true"
            }
            _ => {}
        }
    }
    let (Some((x, y)), Some((w, h))) = (pos, size) else {
        return Ok(None);
    };
    let interactive = tag.ends_with("button")
        || tag.ends_with("item")
        || tag.ends_with("menu")
        || tag.ends_with("tab")
        || matches!(
            tag.as_str(),
            "table-cell" | "combo-box" | "text" | "entry" | "check-box" | "link"
        );
    Ok(Some(Element {
        node: Node {
            tag: Cow::Owned(tag),
            name,
            text: String::new(),
            class: Cow::Borrowed(""),
            description: String::new(),
            rect: Rect::new(x, y, w, h),
            interactive,
        },
        showing: showing && visible,
        usable,
        selected,
        focused,
        depth,
    }))
}

/// Every element of the XML that has a screen position, in document order, with its text.
pub fn all(xml: &str) -> Result<Vec<Element>, String> {
    let mut r = Reader::from_str(xml);
    let mut out: Vec<Element> = Vec::new();
    // for each open element: its index in `out` (None when it has no position)
    let mut open: Vec<Option<usize>> = Vec::new();
    loop {
        match r.read_event() {
            Err(e) => {
                return Err(format!(
                    "the accessibility tree is not XML (at byte {}): {e}",
                    r.buffer_position()
                ))
            }
            Ok(Event::Eof) => break,
            Ok(Event::Start(e)) => {
                let el = element(&e, open.len())?;
                open.push(el.map(|el| {
                    out.push(el);
                    out.len() - 1
                }));
            }
            Ok(Event::Empty(e)) => {
                if let Some(el) = element(&e, open.len())? {
                    out.push(el);
                }
            }
            Ok(Event::End(_)) => {
                open.pop();
            }
            Ok(ev @ (Event::Text(_) | Event::GeneralRef(_))) => {
                if let Some(Some(i)) = open.last() {
                    out[*i]
                        .node
                        .text
                        .push_str(&crate::sheet::xmlpart::text_of(&ev));
                }
            }
            Ok(Event::CData(c)) => {
                if let Some(Some(i)) = open.last() {
                    let t: &str = c.as_ref();
                    out[*i].node.text.push_str(t);
                }
            }
            Ok(_) => {}
        }
    }
    if !open.is_empty() {
        return Err("the accessibility tree's XML ends inside an element".into());
    }
    Ok(out)
}

/// Roles OSWorld's agents see beside those ending in `item`, `button`, `heading`, `label`,
/// `menu`, `link` and the like.
const KEPT: [&str; 17] = [
    "alert",
    "canvas",
    "check-box",
    "combo-box",
    "entry",
    "icon",
    "image",
    "paragraph",
    "scroll-bar",
    "section",
    "slider",
    "static",
    "table-cell",
    "terminal",
    "text",
    "page-tab",
    "dialog",
];

fn kept(tag: &str) -> bool {
    tag.starts_with("document")
        || [
            "item",
            "button",
            "heading",
            "label",
            "scrollbar",
            "searchbox",
            "textbox",
            "link",
            "tabelement",
            "textfield",
            "textarea",
            "menu",
        ]
        .iter()
        .any(|s| tag.ends_with(s))
        || KEPT.contains(&tag)
}

/// The nodes an agent is shown, in document order.
pub fn agent_view(xml: &str) -> Result<Vec<Node>, String> {
    Ok(all(xml)?
        .into_iter()
        .filter(|e| {
            let n = &e.node;
            e.showing
                && e.usable
                && kept(&n.tag)
                && (!n.name.is_empty() || !n.text.is_empty())
                && n.rect.x >= 0
                && n.rect.y >= 0
                && n.rect.w > 0
                && n.rect.h > 0
        })
        .map(|e| e.node)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const XML: &str = r#"<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state" xmlns:cp="https://accessibility.ubuntu.example.org/ns/component" xmlns:attr="https://accessibility.ubuntu.example.org/ns/attributes" name="main"><application name="soffice"><frame name="t.xlsx - LibreOffice Calc" st:showing="true" st:visible="true" st:enabled="true" cp:screencoord="(0, 0)" cp:size="(1920, 1080)"><menu name="Data" st:showing="true" st:visible="true" st:enabled="true" attr:showing="false" cp:screencoord="(324, 19)" cp:size="(43, 19)"/><table name="Sheet1" st:showing="true" st:visible="true" st:enabled="true" cp:screencoord="(41, 157)" cp:size="(1806, 839)"><table-cell name="A1" st:showing="true" st:visible="true" st:enabled="true" cp:screencoord="(41, 157)" cp:size="(48, 17)">a &amp; &lt;b&gt;</table-cell><table-cell name="B1" st:showing="true" st:visible="true" st:enabled="true" cp:screencoord="(89, 157)" cp:size="(40, 17)"/></table><push-button name="Hidden" st:visible="true" st:enabled="true" cp:screencoord="(5, 5)" cp:size="(5, 5)"/></frame></application></desktop-frame>"#;

    #[test]
    fn reads_positions_texts_and_states() {
        let els = all(XML).unwrap();
        let names: Vec<&str> = els.iter().map(|e| e.node.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "t.xlsx - LibreOffice Calc",
                "Data",
                "Sheet1",
                "A1",
                "B1",
                "Hidden"
            ]
        );
        let a1 = &els[3].node;
        assert_eq!(a1.text, "a & <b>");
        assert_eq!(a1.rect, Rect::new(41, 157, 48, 17));
        assert_eq!(&*a1.tag, "table-cell");
        assert!(a1.interactive);
        assert_eq!(els[3].depth, 4);
        // `attr:showing` is an attribute of the application, not the state
        assert!(els[1].showing);
        assert!(!els[5].showing);
    }

    #[test]
    fn the_agent_sees_showing_named_nodes_of_kept_roles() {
        let v = agent_view(XML).unwrap();
        let names: Vec<&str> = v.iter().map(|n| n.name.as_str()).collect();
        // the frame and the table are not roles an agent is shown; the hidden button is not showing
        assert_eq!(names, ["Data", "A1", "B1"]);
    }

    #[test]
    fn malformed_xml_is_an_error_that_says_so() {
        let e = all("<a><b></a>").unwrap_err();
        assert!(e.contains("not XML"), "{e}");
        let e = all("<a st:x=\"1\"><b>").unwrap_err();
        assert!(e.contains("ends inside"), "{e}");
    }
}
