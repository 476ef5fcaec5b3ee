//! The default clock type parameter without `std`: a type no public path names.

/// No value of it exists, so no code can rely on the default until `std` names a real one
/// (see `DefaultClock`). `pub` in a private module: the generator's default names it, and
/// nobody else can.
#[derive(Debug)]
pub enum NoDefaultClock {}

impl super::Clock for NoDefaultClock {
    fn unix_ns(&self) -> u64 {
        match *self {}
    }
}
