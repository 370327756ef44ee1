//! Name checks of the Kubernetes API that configuration validation needs: label keys
//! (qualified names with an optional DNS-subdomain prefix) and label values.
//!
//! Each check returns the problems found as messages worded like the API server's, empty
//! when the name is valid.

const QUALIFIED_NAME_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;
const LABEL_VALUE_MAX: usize = 63;

const NAME_FMT: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
                        alphanumeric character (e.g. 'MyName', or 'my.name', or '123-abc')";

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`
fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// A lowercase RFC 1123 subdomain: dot-separated labels of `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= DNS1123_SUBDOMAIN_MAX
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            match (b.first(), b.last()) {
                (Some(f), Some(l)) => {
                    (f.is_ascii_lowercase() || f.is_ascii_digit())
                        && (l.is_ascii_lowercase() || l.is_ascii_digit())
                        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                }
                _ => false,
            }
        })
}

/// A qualified name (`[prefix/]name`), as label keys and resource names are.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else if !is_dns1123_subdomain(prefix) {
                errs.push(
                    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
                     '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com')"
                        .to_owned(),
                );
            }
            name
        }
        _ => {
            errs.push(format!(
                "a qualified name {NAME_FMT} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > QUALIFIED_NAME_MAX {
        errs.push(format!("name part must be no more than {QUALIFIED_NAME_MAX} bytes"));
    } else if !is_name_part(name) {
        errs.push(format!("name part {NAME_FMT}"));
    }
    errs
}

/// A label value: empty, or at most 63 characters of the name alphabet.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX {
        errs.push(format!("must be no more than {LABEL_VALUE_MAX} bytes"));
    }
    if !value.is_empty() && !is_name_part(value) {
        errs.push(format!("a valid label must be an empty string or {NAME_FMT}"));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_name_table() {
        let long = "a".repeat(64);
        let long_key = format!("example.com/{long}");
        let cases: &[(&str, &str, bool)] = &[
            ("plain", "zone", true),
            ("prefixed", "topology.kubernetes.io/zone", true),
            ("dots and dashes", "a-b_c.d", true),
            ("empty", "", false),
            ("leading dash", "-zone", false),
            ("trailing dot", "zone.", false),
            ("space", "my zone", false),
            ("uppercase prefix", "Example.com/zone", false),
            ("empty prefix", "/zone", false),
            ("empty name", "example.com/", false),
            ("two slashes", "a/b/c", false),
            ("name too long", &long, false),
            ("prefixed name too long", &long_key, false),
        ];
        for (name, value, valid) in cases {
            let errs = qualified_name_errors(value);
            assert_eq!(errs.is_empty(), *valid, "{name}: {value:?} → {errs:?}");
        }
    }

    #[test]
    fn label_value_table() {
        let long = "v".repeat(64);
        let cases: &[(&str, &str, bool)] = &[
            ("empty", "", true),
            ("plain", "us-east-1a", true),
            ("underscore", "a_b", true),
            ("slash", "a/b", false),
            ("leading dot", ".a", false),
            ("too long", &long, false),
        ];
        for (name, value, valid) in cases {
            let errs = label_value_errors(value);
            assert_eq!(errs.is_empty(), *valid, "{name}: {value:?} → {errs:?}");
        }
    }
}
