//! `--format` / `-o`: one vocabulary for every command's output. Each command takes the
//! names below that it can print, and every one defaults to `text`:
//!
//! | name | what | commands |
//! |---|---|---|
//! | `text` | for a reader: sentences and aligned tables (`table`, the old name, still works) | all |
//! | `json` | the whole report as one JSON document | all |
//! | `yaml` | the same document as YAML | run, simulate, explain, compare, replay, feature-gates |
//! | `wide` | `text` with every row and more columns (kubectl's `-o wide`) | explain |
//! | `csv` | one row per scenario | sweep |
//!
//! Figures carry their unit in text (`µs/pod`, `s`, `instructions/pod`) and in JSON field
//! names or a `unit` field.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Yaml,
    Wide,
    Csv,
}

/// Every format, in the order help lists them.
pub const ALL: [Format; 5] = [Format::Text, Format::Json, Format::Yaml, Format::Wide, Format::Csv];

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Yaml => "yaml",
            Format::Wide => "wide",
            Format::Csv => "csv",
        }
    }

    fn possible_value(self) -> PossibleValue {
        let v = PossibleValue::new(self.name());
        match self {
            Format::Text => v.alias("table").help("for a reader: sentences and aligned tables (the default)"),
            Format::Json => v.help("the whole report as one JSON document"),
            Format::Yaml => v.help("the same document as YAML"),
            Format::Wide => v.help("text with every row and more columns"),
            Format::Csv => v.help("comma-separated rows"),
        }
    }

    /// Whether the output is for a program (no progress bars, no chatter on stderr).
    pub fn is_machine(self) -> bool {
        matches!(self, Format::Json | Format::Yaml | Format::Csv)
    }
}

/// A `--format` value parser accepting only `allowed` (`text` is always among them).
pub fn parser(allowed: &'static [Format]) -> impl TypedValueParser<Value = Format> {
    PossibleValuesParser::new(allowed.iter().map(|f| f.possible_value())).map(|s| {
        // `table` is text's alias; every other name is a format's own.
        ALL.into_iter().find(|f| f.name() == s).unwrap_or(Format::Text)
    })
}

/// `value` as a JSON (pretty, with a final newline) or YAML document.
pub fn document<T: Serialize>(value: &T, format: Format) -> Result<String, String> {
    match format {
        Format::Yaml => yaml_serde::to_string(value).map_err(|e| e.to_string()),
        _ => serde_json::to_string_pretty(value).map(|s| s + "\n").map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every command's `--format`: `-o` too, the default `text`, only names of the one
    /// vocabulary (and `table` still read as `text`).
    #[test]
    fn every_format_flag_speaks_the_one_vocabulary() {
        let cli = crate::Cli::command();
        let names: Vec<&str> = super::ALL.iter().map(|f| f.name()).collect();
        let mut seen = Vec::new();
        let mut check = |path: String, cmd: &clap::Command| {
            let Some(arg) = cmd.get_arguments().find(|a| a.get_id() == "format") else { return };
            assert_eq!(arg.get_short(), Some('o'), "{path}: -o is --format");
            let defaults: Vec<String> =
                arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
            assert_eq!(defaults, ["text"], "{path}: the default");
            let values: Vec<String> = arg.get_possible_values().iter().map(|v| v.get_name().to_owned()).collect();
            assert!(values.contains(&"text".to_owned()) && values.contains(&"json".to_owned()), "{path}: {values:?}");
            for v in &values {
                assert!(names.contains(&v.as_str()), "{path}: {v:?} is not in the vocabulary");
            }
            assert!(arg.get_possible_values().iter().any(|v| v.matches("table", false)), "{path}: table = text");
            seen.push(path);
        };
        check("ksched".into(), &cli);
        for sub in cli.get_subcommands() {
            check(sub.get_name().to_owned(), sub);
            for subsub in sub.get_subcommands() {
                check(format!("{} {}", sub.get_name(), subsub.get_name()), subsub);
            }
        }
        let commands = [
            "run",
            "compare",
            "gate",
            "simulate",
            "explain",
            "sweep",
            "sweep merge",
            "golden",
            "soak",
            "replay",
            "feature-gates",
        ];
        for cmd in commands {
            assert!(seen.iter().any(|s| s == cmd), "{cmd} has no --format");
        }
    }
}
