//! The `locality gen` command: read the spec, report diagnostics, write or check the output.
//!
//! Exit codes: 0 done (or up to date with `--check`); 1 `--check` found the file stale or
//! missing; 2 the spec is invalid or a file could not be read or written. Nothing is written
//! when the spec has errors.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{generate, Format, Level, SourceFile};

/// Arguments of `locality gen`.
pub struct GenArgs {
    /// The spec file.
    pub spec: PathBuf,
    /// Where to write (stdout when absent).
    pub output: Option<PathBuf>,
    /// Compare with `output` instead of writing it.
    pub check: bool,
    /// Output syntax.
    pub format: Format,
}

/// Runs the command; returns the process exit code.
pub fn run(args: &GenArgs, stdout: &mut dyn Write, stderr: &mut dyn Write) -> u8 {
    let spec_name = args.spec.display().to_string();
    let text = match std::fs::read_to_string(&args.spec) {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(stderr, "error: cannot read {spec_name}: {e}");
            return 2;
        }
    };
    let source = SourceFile {
        name: &spec_name,
        text: &text,
    };
    // The header names the spec by its file name: one rule for stdout and `-o`, so that the
    // output (and `--check`'s answer) is the same from whatever directory the command runs in
    // and wherever the output goes.
    let header_name = header_name(&args.spec);
    let generated = generate(
        &SourceFile {
            name: &header_name,
            text: &text,
        },
        args.format,
    );
    let mut errors = 0;
    for diagnostic in &generated.diagnostics {
        errors += usize::from(diagnostic.level == Level::Error);
        let _ = write!(stderr, "{}", source.render(diagnostic));
    }
    let Some(output) = generated.text else {
        let _ = writeln!(stderr, "error: {errors} error(s) in {spec_name}; nothing was written");
        return 2;
    };
    match (&args.output, args.check) {
        (None, true) => {
            let _ = writeln!(stderr, "error: --check needs the file to compare: -o FILE");
            2
        }
        (None, false) => {
            let _ = stdout.write_all(output.as_bytes());
            0
        }
        (Some(path), true) => {
            // A missing file is stale (1); one that exists but cannot be read is an error (2).
            let current = match std::fs::read_to_string(path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => {
                    let _ = writeln!(stderr, "error: cannot read {}: {e}", path.display());
                    return 2;
                }
            };
            if current == output {
                return 0;
            }
            let file = path.display().to_string();
            let diff = similar::TextDiff::from_lines(&current, &output);
            let _ = write!(
                stdout,
                "{}",
                diff.unified_diff()
                    .context_radius(3)
                    .header(&file, &format!("{file} (from {spec_name})"))
            );
            let _ = writeln!(stderr, "{file} is stale: run `locality gen {spec_name} -o {file}`");
            1
        }
        (Some(path), false) => {
            // An exclusive temporary file with a random name, synced and renamed: a name planted
            // in a shared folder is never followed. The output is not secret: 0644.
            match crate::files::write_atomically(path, output.as_bytes(), 0o644) {
                Ok(()) => 0,
                Err(e) => {
                    let _ = writeln!(stderr, "error: cannot write {}: {e}", path.display());
                    2
                }
            }
        }
    }
}

/// The spec as the header names it: its file name (the path as typed when it has none).
fn header_name(spec: &Path) -> String {
    spec.file_name().map_or_else(
        || spec.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_names_the_spec_by_its_file_name() {
        let cwd = std::env::current_dir().unwrap();
        for spec in [
            cwd.join("examples/generator/tokyo-osaka.hcl"),
            Path::new("examples/generator/./tokyo-osaka.hcl").to_path_buf(),
            Path::new("../specs/tokyo-osaka.hcl").to_path_buf(),
            Path::new("tokyo-osaka.hcl").to_path_buf(),
        ] {
            assert_eq!(header_name(&spec), "tokyo-osaka.hcl", "{}", spec.display());
        }
    }
}
