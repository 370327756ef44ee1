//! Reading a large `kind: List` one item at a time.
//!
//! `kubectl get ... -o yaml` writes one YAML document: a `List` whose `items` is a block
//! sequence holding every object. Parsing that document whole (the YAML parser keeps every
//! event of a document, then the reader builds one `serde_json::Value` tree of it) costs
//! several times the file's size in memory. When the text has the simple shape kubectl
//! writes, this module cuts it at the line level instead: the list's own fields (the
//! *header*) and each item's lines, which are parsed one at a time, so at most one item is
//! held as a tree.
//!
//! The cut is conservative: any line it cannot account for (a document marker, a directive,
//! a line indented between an item's dash and its content, a comment outside the items'
//! indentation) makes it decline, and the whole file is read the ordinary way. An error
//! while reading the cut items rolls back what they added and re-reads the file the
//! ordinary way, so errors are exactly the ordinary reader's (YAML syntax errors anywhere in
//! the document come before any object's error there).
//!
//! A JSON file that is one object (`kubectl get ... -o json`) is read the same way through
//! serde_json's streaming deserializer: `items` is visited one element at a time.

use std::fmt;
use std::ops::Range;

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{list_item_default, n32, object_kind, Manifests, Source};

/// A single-document YAML file whose top-level `items:` key holds a block sequence, cut by
/// lines.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ListCut {
    /// The document without the `items` key and its block: the list's own fields.
    pub header: String,
    /// The byte ranges (in the file's text) of each item's lines, the item's dash first.
    pub items: Vec<Range<usize>>,
    /// How far the items' dashes are indented.
    pub indent: usize,
}

/// Whether a line is a document marker (`---`, `...`) or a directive (`%`) at column 0:
/// those end or start documents, which the cut does not handle.
fn is_stream_syntax(line: &str) -> bool {
    line.starts_with('%')
        || ["---", "..."]
            .iter()
            .any(|m| line.strip_prefix(m).is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t'])))
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_blank(line: &str) -> bool {
    line.trim_matches([' ', '\t', '\r']).is_empty()
}

/// Lines of `text` with their byte ranges (without the line break; a `\r` before it is kept
/// in the range and ignored by the checks here, as YAML treats `\r\n` as one break).
fn lines(text: &str) -> impl Iterator<Item = (Range<usize>, &str)> {
    let mut start = 0;
    text.split_inclusive('\n').map(move |raw| {
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        let range = start..start + line.len();
        start += raw.len();
        (range, line.strip_suffix('\r').unwrap_or(line))
    })
}

/// Cuts `text` as above, or `None` when its shape is not the simple one (the caller reads it
/// whole). An empty `items` block is `None` too: there is nothing to gain.
pub(super) fn cut_list(text: &str) -> Option<ListCut> {
    let mut header = String::new();
    let mut items: Vec<Range<usize>> = Vec::new();
    let mut indent = None::<usize>;
    // 0: before `items:`; 1: in its block; 2: after it.
    let mut state = 0;
    let mut first_content = true;
    for (range, line) in lines(text) {
        if state == 1 {
            if is_blank(line) {
                if let Some(last) = items.last_mut() {
                    last.end = range.end;
                }
                continue;
            }
            let n = indentation(line);
            let rest = &line[n..];
            let dash = rest == "-" || rest.starts_with("- ");
            match indent {
                None if dash => indent = Some(n),
                None => return None,
                Some(_) => {}
            }
            let want = indent.unwrap_or(0);
            if n == want && dash {
                items.push(range);
                continue;
            }
            if n >= want + 2 {
                // The item's content: after removing the indentation, it must not read as
                // stream syntax.
                if is_stream_syntax(&line[want + 2..]) {
                    return None;
                }
                items.last_mut()?.end = range.end;
                continue;
            }
            if n == 0 && !rest.starts_with(['#', '-']) {
                state = 2;
            } else {
                return None;
            }
        }
        if is_stream_syntax(line) {
            // A `---` before any content starts the one document; any other is a second one.
            if first_content && line.starts_with("---") && is_blank(&line[3..]) {
                first_content = false;
                header.push('\n');
                continue;
            }
            return None;
        }
        if !is_blank(line) && !line.trim_start().starts_with('#') {
            first_content = false;
        }
        if state == 0 && line.strip_prefix("items:").is_some_and(is_blank) {
            state = 1;
            // Keep the header's line count: its errors are re-read the ordinary way anyway,
            // but a blank line costs nothing.
            header.push('\n');
            continue;
        }
        if state == 2 && line.strip_prefix("items:").is_some_and(|r| r.starts_with([' ', ':', '\t']) || r.is_empty()) {
            return None;
        }
        header.push_str(line);
        header.push('\n');
    }
    if items.is_empty() {
        return None;
    }
    Some(ListCut { header, items, indent: indent.unwrap_or(0) })
}

/// Appends one item's lines to `out` as written (the dash and its indentation kept, so
/// consecutive items form a block sequence), leaving out `metadata.managedFields` (the API
/// server's field ownership records, which ksched never reads and which are often a third of
/// a dump).
pub(super) fn push_item(text: &str, range: Range<usize>, indent: usize, out: &mut String) {
    let mut in_metadata = false;
    let mut child_indent = None::<usize>;
    // The indentation of the `managedFields:` key being left out.
    let mut skipping = None::<usize>;
    for (_, line) in lines(&text[range]) {
        if is_blank(line) {
            if skipping.is_none() {
                out.push('\n');
            }
            continue;
        }
        // The line as the item's own: a lone dash is empty.
        let content = line.get(indent + 2..).unwrap_or("");
        let n = indentation(content);
        let rest = &content[n..];
        if let Some(at) = skipping {
            if n > at || (n == at && (rest == "-" || rest.starts_with("- "))) {
                continue;
            }
            skipping = None;
        }
        if n == 0 {
            in_metadata = rest.strip_prefix("metadata:").is_some_and(is_blank);
            child_indent = None;
        } else if in_metadata
            && *child_indent.get_or_insert(n) == n
            && rest.strip_prefix("managedFields:").is_some_and(is_blank)
        {
            skipping = Some(n);
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
}

/// Reads a JSON text holding one list object item by item (`Manifests::read_cut_list`'s
/// JSON counterpart). Any error means "read it the ordinary way": the caller rolls back.
pub(super) fn read_json_list(m: &mut Manifests, source: &Source, text: &str) -> Result<(), ()> {
    let mut list = JsonList { m, source, header: Map::new(), items_seen: false, held: Vec::new(), count: 0 };
    let mut de = serde_json::Deserializer::from_str(text);
    (&mut list).deserialize(&mut de).map_err(|_| ())?;
    de.end().map_err(|_| ())?;
    if !list.items_seen {
        return Err(());
    }
    let (kind, api_version) = object_kind(source, &list.header).map_err(|_| ())?;
    if !kind.ends_with("List") {
        return Err(());
    }
    let item_default = list_item_default(source, &kind, &api_version).map_err(|_| ())?;
    let item_default = item_default.as_ref().map(|(v, k)| (v.as_str(), k.as_str()));
    for (j, value) in std::mem::take(&mut list.held) {
        list.m.read_object(Source { item: Some(n32(j)), ..source.clone() }, value, item_default).map_err(|_| ())?;
    }
    Ok(())
}

/// The state of `read_json_list`: the list's own fields, and the items held back because
/// they (or an item before them) lack `apiVersion` or `kind`, which the list's kind (not
/// known until its field is read, after `items` in kubectl's output) may supply.
struct JsonList<'a> {
    m: &'a mut Manifests,
    source: &'a Source,
    header: Map<String, Value>,
    items_seen: bool,
    held: Vec<(usize, Value)>,
    count: usize,
}

impl JsonList<'_> {
    fn item(&mut self, value: Value) -> Result<(), ()> {
        let j = self.count;
        self.count += 1;
        if value.is_null() {
            return Ok(());
        }
        let typed = |f: &str| value.get(f).and_then(Value::as_str).is_some_and(|s| !s.is_empty());
        if !self.held.is_empty() || !typed("kind") || !typed("apiVersion") {
            self.held.push((j, value));
            return Ok(());
        }
        self.m.read_object(Source { item: Some(n32(j)), ..self.source.clone() }, value, None).map_err(|_| ())
    }
}

const FALLBACK: &str = "read the ordinary way";

impl<'de> DeserializeSeed<'de> for &mut JsonList<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for &mut JsonList<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" {
                if self.items_seen {
                    return Err(A::Error::custom(FALLBACK));
                }
                self.items_seen = true;
                map.next_value_seed(Items(&mut *self))?;
            } else {
                let value: Value = map.next_value()?;
                self.header.insert(key, value);
            }
        }
        Ok(())
    }
}

struct Items<'a, 'b>(&'a mut JsonList<'b>);

impl<'de> DeserializeSeed<'de> for Items<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Items<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of objects")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(value) = seq.next_element::<Value>()? {
            self.0.item(value).map_err(|()| A::Error::custom(FALLBACK))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(text: &str) -> Option<(String, Vec<String>)> {
        let cut = cut_list(text)?;
        let mut out = Vec::new();
        for r in cut.items {
            let mut s = String::new();
            push_item(text, r, cut.indent, &mut s);
            out.push(s);
        }
        Some((cut.header, out))
    }

    #[test]
    fn cut_list_kubectl_shape_splits_header_and_items() {
        let text = "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Node\n\n  metadata: {name: a}\n- kind: Pod\n  \
                    spec:\n    x: |\n      keep\n\n      this\nkind: List\nmetadata:\n  resourceVersion: \"\"\n";
        let (header, items) = items(text).unwrap();
        assert_eq!(header, "apiVersion: v1\n\nkind: List\nmetadata:\n  resourceVersion: \"\"\n");
        assert_eq!(
            items,
            [
                "- apiVersion: v1\n  kind: Node\n\n  metadata: {name: a}\n",
                "- kind: Pod\n  spec:\n    x: |\n      keep\n\n      this\n"
            ]
        );
    }

    #[test]
    fn cut_list_indented_items_and_leading_marker_are_cut() {
        let text = "# dump\n---\nkind: List\nitems:\n  - a: 1\n    b: 2\n  -\n    c: 3\n";
        let (header, items) = items(text).unwrap();
        assert_eq!(header, "# dump\n\nkind: List\n\n");
        assert_eq!(items, ["  - a: 1\n    b: 2\n", "  -\n    c: 3\n"]);
    }

    #[test]
    fn item_text_leaves_out_managed_fields_only() {
        let text = "items:\n- metadata:\n    name: a\n    managedFields:\n    - manager: m\n      fieldsV1:\n        \
                    f:spec: {}\n    - manager: n\n    labels: {x: y}\n  spec:\n    managedFields:\n    - kept\n";
        let (_, got) = items(text).unwrap();
        assert_eq!(got, ["- metadata:\n    name: a\n    labels: {x: y}\n  spec:\n    managedFields:\n    - kept\n"]);
        // Not a block: kept as written.
        let text = "items:\n- metadata:\n    managedFields: []\n";
        assert_eq!(items(text).unwrap().1, ["- metadata:\n    managedFields: []\n"]);
    }

    #[test]
    fn cut_list_unusual_shapes_decline() {
        for (name, text) in [
            ("two documents", "kind: List\nitems:\n- a: 1\n---\nkind: List\n"),
            ("marker inside an item", "kind: List\nitems:\n- a: |\n    x\n  ---\n"),
            ("directive", "%YAML 1.2\n---\nkind: List\nitems:\n- a: 1\n"),
            ("flow items", "kind: List\nitems: [{a: 1}]\n"),
            ("no items", "kind: Pod\nmetadata: {name: a}\n"),
            ("empty items", "kind: List\nitems:\nmetadata: {}\n"),
            ("odd indentation", "kind: List\nitems:\n- a: 1\n b: 2\n"),
            ("comment between items", "kind: List\nitems:\n- a: 1\n# c\n- b: 2\n"),
            ("items twice", "kind: List\nitems:\n- a: 1\nitems:\n- b: 1\n"),
            ("document end", "kind: List\nitems:\n- a: 1\n...\n"),
        ] {
            assert_eq!(cut_list(text), None, "{name}");
        }
    }
}
