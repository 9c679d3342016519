//! An I/O error in a few plain words, for sentences that name a file. The lowest room of the
//! house: nothing of this crate is used here, so that `source`, `trusted` and `aws_error` can
//! all say it without a circle between them.

/// An I/O error as a reader of a message expects it: "no such file", "permission denied".
pub(crate) fn io_problem(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        std::io::ErrorKind::IsADirectory => "it is a directory".into(),
        std::io::ErrorKind::InvalidData => "it is not UTF-8 text".into(),
        _ => e.to_string(),
    }
}
