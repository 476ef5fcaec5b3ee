//! File descriptors: the process's limit raised to its hard limit, and the connection cap
//! kept under it.

/// Raises this process's soft descriptor limit to its hard limit (as Go's runtime does),
/// so that the connection cap, not the usual 1,024, bounds the connections; returns the
/// soft limit now in force (`None` where the system does not say).
pub fn raise_descriptor_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, getrlimit, setrlimit};
        let limit = getrlimit(Resource::Nofile);
        if let (Some(current), Some(maximum)) = (limit.current, limit.maximum)
            && current < maximum
        {
            let raised = rustix::process::Rlimit {
                current: Some(maximum),
                maximum: Some(maximum),
            };
            if setrlimit(Resource::Nofile, raised).is_ok() {
                return Some(maximum);
            }
        }
        limit.current
    }
    #[cfg(not(unix))]
    None
}

/// The connection cap per listener: the one asked for, kept under the descriptor limit
/// (64 kept for the store's connections, files and the listeners themselves), shared by
/// the `listeners`.
pub(crate) fn connection_cap(asked: usize, listeners: usize) -> usize {
    #[cfg(unix)]
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    #[cfg(not(unix))]
    let soft: Option<u64> = None;
    match soft {
        Some(soft) => {
            let room = usize::try_from(soft.saturating_sub(64)).unwrap_or(usize::MAX);
            asked.min((room / listeners.max(1)).max(1))
        }
        None => asked,
    }
}
