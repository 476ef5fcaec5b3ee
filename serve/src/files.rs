//! Files the server reads again when they change (the TLS pair, the token file): what a
//! file was when last read, so that a change is seen (a Kubernetes secret is swapped by a
//! rename, which changes the inode).

use std::path::Path;
use std::time::SystemTime;

/// A file's modification time, length and inode; `None` if it cannot be read.
pub(crate) type Stamp = Option<(SystemTime, u64, u64)>;

/// `path` as it is now.
pub(crate) fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some((meta.modified().ok()?, meta.len(), inode))
}
