//! Where node ids come from.

use core::net::{IpAddr, Ipv4Addr};

use crate::error::Error;

/// Sonyflake's private ranges: 10/8, 172.16/12, 192.168/16 (RFC 1918) and 169.254/16
/// (link-local, RFC 3927).
pub fn is_private_ipv4(ip: Ipv4Addr) -> bool {
    let [a, b, _, _] = ip.octets();
    a == 10
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 168)
        || (a == 169 && b == 254)
}

/// Sonyflake's default machine id from a list of addresses, in the order given: the first
/// IPv4 address that is not loopback and is private; the id is its last two octets
/// (`10.0.10.5` -> `2565`).
pub fn machine_id_from_addrs(addrs: impl IntoIterator<Item = IpAddr>) -> Result<u16, Error> {
    addrs
        .into_iter()
        .find_map(|ip| match ip {
            IpAddr::V4(v4) if !v4.is_loopback() && is_private_ipv4(v4) => Some(v4),
            _ => None,
        })
        .map(|ip| {
            let [_, _, c, d] = ip.octets();
            u16::from(c) << 8 | u16::from(d)
        })
        .ok_or(Error::NoPrivateIp)
}

#[cfg(feature = "std")]
/// Sonyflake's default machine id from this host's interface addresses, in the order the
/// OS lists them. Fails with [`Error::NoPrivateIp`] if there is none (or the list cannot
/// be read).
///
/// Known trap, kept from the reference: hosts in 10.0/16 and 10.1/16 with the same last
/// two octets get the same id. In containers prefer an explicit, leased node id.
pub fn private_ip_machine_id() -> Result<u16, Error> {
    let ifaces = if_addrs::get_if_addrs().map_err(|_| Error::NoPrivateIp)?;
    machine_id_from_addrs(ifaces.iter().map(|i| i.ip()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> IpAddr {
        IpAddr::V4(s.parse().unwrap())
    }

    #[test]
    fn reference_rules() {
        assert_eq!(machine_id_from_addrs([v4("10.0.10.5")]), Ok(2565));
        assert_eq!(
            machine_id_from_addrs([
                v4("127.0.0.1"),
                "::1".parse().unwrap(),
                v4("8.8.8.8"),
                v4("192.168.1.2"),
                v4("10.0.0.1")
            ]),
            Ok(258)
        );
        assert_eq!(machine_id_from_addrs([v4("172.31.255.254")]), Ok(0xFFFE));
        assert_eq!(machine_id_from_addrs([v4("169.254.0.7")]), Ok(7));
        for public in [
            "172.15.0.1",
            "172.32.0.1",
            "192.169.0.1",
            "11.0.0.1",
            "127.0.0.1",
        ] {
            assert_eq!(
                machine_id_from_addrs([v4(public)]),
                Err(Error::NoPrivateIp),
                "{public}"
            );
        }
        assert_eq!(machine_id_from_addrs([]), Err(Error::NoPrivateIp));
        // The trap the docs warn about.
        assert_eq!(
            machine_id_from_addrs([v4("10.0.10.5")]),
            machine_id_from_addrs([v4("10.1.10.5")])
        );
    }

    #[cfg(feature = "std")]
    #[test]
    fn this_host_agrees_with_its_own_address_list() {
        let addrs: Vec<IpAddr> = if_addrs::get_if_addrs()
            .unwrap()
            .iter()
            .map(|i| i.ip())
            .collect();
        println!("interface addresses here: {addrs:?}");
        assert_eq!(private_ip_machine_id(), machine_id_from_addrs(addrs));
    }
}
