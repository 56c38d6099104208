//! `devices -v` as text, in ibv_devinfo -v's layout (so the two diff line by line, sysfs's
//! lines only added), and as JSON; the stderr note on what a sysfs-only view lacks.

use std::fmt::Write as _;

use crate::model::device::GidType;
use crate::model::devinfo::{
    DevInfo, DevView, DevinfoPort, GidInfo, PortSysfs, SysfsDevInfo, SysfsPortInfo,
    MISSING_DEVICE_FIELDS, MISSING_PORT_FIELDS,
};
use crate::model::gid::Gid;
use crate::output;

/// The JSON of `devices -v`: one object per device, ibv_devinfo's keys.
pub fn json(views: &[DevView]) -> String {
    output::json(&views)
}

/// The text of `devices -v`: each device in ibv_devinfo -v's layout.
pub fn text(views: &[DevView]) -> String {
    views
        .iter()
        .map(|v| match v {
            DevView::Verbs(info) => render(info),
            DevView::Sysfs(d) => render_sysfs(d),
        })
        .collect()
}

fn list(out: &mut String, names: &[String]) {
    for n in names {
        let _ = writeln!(out, "\t\t\t\t\t{n}");
    }
}

/// One device verbs answered for, as ibv_devinfo -v prints it, sysfs's lines added.
fn render(d: &DevInfo) -> String {
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(w, "hca_id:\t{}", d.device);
    rows(w, 1, DEVICE, d);
    device_caps(w, d);
    render_device_sysfs(w, d.driver.as_deref(), d.uverbs.as_deref());
    for port in &d.ports {
        render_port(w, port, d.transport_raw == 0);
    }
    o
}

/// One attribute line of ibv_devinfo -v: its name (the JSON key too: `model::devinfo`'s
/// field) and its value as ibv_devinfo prints it. A table of them is one block of lines,
/// each at ibv_devinfo's value column (`field`).
type Row<T> = (&'static str, for<'a> fn(&'a T) -> Line<'a>);

enum Line<'a> {
    /// ibv_devinfo leaves the line out.
    Omitted,
    Value(String),
    /// The value, then its flags' names one per line.
    Flags(&'a str, &'a [String]),
}

fn value(v: impl std::fmt::Display) -> Line<'static> {
    Line::Value(v.to_string())
}

/// An enumerated value, `PORT_ACTIVE (4)`.
fn named(name: &str, raw: impl std::fmt::Display) -> Line<'static> {
    Line::Value(format!("{name} ({raw})"))
}

/// A line ibv_devinfo prints only when `shown`.
fn only_if(shown: bool, v: impl std::fmt::Display) -> Line<'static> {
    if shown {
        value(v)
    } else {
        Line::Omitted
    }
}

fn if_some(v: &Option<String>) -> Line<'static> {
    v.as_ref().map_or(Line::Omitted, value)
}

fn rows<T>(w: &mut String, depth: usize, table: &[Row<T>], item: &T) {
    for (name, line) in table {
        match line(item) {
            Line::Omitted => {}
            Line::Value(v) => field(w, depth, name, v),
            Line::Flags(v, names) => {
                field(w, depth, name, v);
                list(w, names);
            }
        }
    }
}

/// The attributes of `struct ibv_device_attr`: identity and limits, hca_id's block up to
/// local_ca_ack_delay.
const DEVICE: &[Row<DevInfo>] = &[
    ("transport", |d| named(&d.transport, d.transport_raw)),
    ("fw_ver", |d| if_some(&d.fw_ver)),
    ("node_guid", |d| value(&d.node_guid)),
    ("sys_image_guid", |d| value(&d.sys_image_guid)),
    ("vendor_id", |d| value(&d.vendor_id)),
    ("vendor_part_id", |d| value(d.vendor_part_id)),
    ("hw_ver", |d| value(&d.hw_ver)),
    ("board_id", |d| if_some(&d.board_id)),
    ("phys_port_cnt", |d| value(d.phys_port_cnt)),
    ("max_mr_size", |d| value(&d.max_mr_size)),
    ("page_size_cap", |d| value(&d.page_size_cap)),
    ("max_qp", |d| value(d.max_qp)),
    ("max_qp_wr", |d| value(d.max_qp_wr)),
    ("device_cap_flags", |d| {
        Line::Flags(&d.device_cap_flags, &d.device_cap_flags_decoded)
    }),
    ("max_sge", |d| value(d.max_sge)),
    ("max_sge_rd", |d| value(d.max_sge_rd)),
    ("max_cq", |d| value(d.max_cq)),
    ("max_cqe", |d| value(d.max_cqe)),
    ("max_mr", |d| value(d.max_mr)),
    ("max_pd", |d| value(d.max_pd)),
    ("max_qp_rd_atom", |d| value(d.max_qp_rd_atom)),
    ("max_ee_rd_atom", |d| value(d.max_ee_rd_atom)),
    ("max_res_rd_atom", |d| value(d.max_res_rd_atom)),
    ("max_qp_init_rd_atom", |d| value(d.max_qp_init_rd_atom)),
    ("max_ee_init_rd_atom", |d| value(d.max_ee_init_rd_atom)),
    ("atomic_cap", |d| named(&d.atomic_cap, d.atomic_cap_raw)),
    ("max_ee", |d| value(d.max_ee)),
    ("max_rdd", |d| value(d.max_rdd)),
    ("max_mw", |d| value(d.max_mw)),
    ("max_raw_ipv6_qp", |d| value(d.max_raw_ipv6_qp)),
    ("max_raw_ethy_qp", |d| value(d.max_raw_ethy_qp)),
    ("max_mcast_grp", |d| value(d.max_mcast_grp)),
    ("max_mcast_qp_attach", |d| value(d.max_mcast_qp_attach)),
    ("max_total_mcast_qp_attach", |d| {
        value(d.max_total_mcast_qp_attach)
    }),
    ("max_ah", |d| value(d.max_ah)),
    ("max_fmr", |d| value(d.max_fmr)),
    ("max_map_per_fmr", |d| {
        only_if(d.max_fmr != 0, d.max_map_per_fmr)
    }),
    ("max_srq", |d| value(d.max_srq)),
    ("max_srq_wr", |d| only_if(d.max_srq != 0, d.max_srq_wr)),
    ("max_srq_sge", |d| only_if(d.max_srq != 0, d.max_srq_sge)),
    ("max_pkeys", |d| value(d.max_pkeys)),
    ("local_ca_ack_delay", |d| value(d.local_ca_ack_delay)),
];

/// The attributes of `struct ibv_device_attr_ex`: ODP, offloads, tag matching, moderation,
/// device memory. Written line by line, not as `Row`s: ibv_devinfo prints this part with
/// headings, nested blocks and columns of its own, which the diffable layout keeps.
fn device_caps(w: &mut String, d: &DevInfo) {
    let _ = writeln!(w, "\tgeneral_odp_caps:");
    list(w, &d.general_odp_caps);
    for (label, caps) in [
        ("rc_odp_caps", &d.rc_odp_caps),
        ("uc_odp_caps", &d.uc_odp_caps),
        ("ud_odp_caps", &d.ud_odp_caps),
        ("xrc_odp_caps", &d.xrc_odp_caps),
    ] {
        let _ = writeln!(w, "\t{label}:");
        if caps.is_empty() {
            let _ = writeln!(w, "\t\t\t\t\tNO SUPPORT");
        }
        list(w, caps);
    }
    if d.completion_timestamp_mask
        .trim_start_matches("0x")
        .bytes()
        .all(|b| b == b'0')
    {
        let _ = writeln!(w, "\tcompletion_timestamp_mask not supported");
    } else {
        let _ = writeln!(
            w,
            "\tcompletion timestamp_mask:\t\t\t{}",
            d.completion_timestamp_mask
        );
    }
    if d.hca_core_clock != 0 {
        let _ = writeln!(w, "\thca_core_clock:\t\t\t{}kHZ", d.hca_core_clock);
    } else {
        let _ = writeln!(w, "\tcore clock not supported");
    }
    if !d.raw_packet_caps.is_empty() {
        let _ = writeln!(w, "\traw packet caps:");
        list(w, &d.raw_packet_caps);
    }
    let _ = writeln!(w, "\tdevice_cap_flags_ex:\t\t{}", d.device_cap_flags_ex);
    list(w, &d.device_cap_flags_ex_decoded);
    offload_caps(w, d);
    let t = &d.tm_caps;
    if t.max_num_tags != 0 {
        let _ = writeln!(w, "\tmax_rndv_hdr_size:\t\t{}", t.max_rndv_hdr_size);
        let _ = writeln!(w, "\tmax_num_tags:\t\t\t{}", t.max_num_tags);
        let _ = writeln!(w, "\tmax_ops:\t\t\t{}", t.max_ops);
        let _ = writeln!(w, "\tmax_sge:\t\t\t{}", t.max_sge);
        let _ = writeln!(w, "\tflags:");
        list(w, &t.flags);
    } else {
        let _ = writeln!(w, "\ttag matching not supported");
    }
    let c = &d.cq_moderation_caps;
    if c.max_cq_count != 0 && c.max_cq_period != 0 {
        let _ = writeln!(w, "\n\tcq moderation caps:");
        let _ = writeln!(w, "\t\tmax_cq_count:\t{}", c.max_cq_count);
        let _ = writeln!(w, "\t\tmax_cq_period:\t{} us\n", c.max_cq_period);
    }
    if d.max_dm_size != 0 {
        let _ = writeln!(
            w,
            "\tmaximum available device memory:\t{}Bytes\n",
            d.max_dm_size
        );
    }
    let _ = writeln!(w, "\tnum_comp_vectors:\t\t{}", d.num_comp_vectors);
}

/// The offloads' part of `device_caps`: TSO, RSS, WQs and packet pacing.
fn offload_caps(w: &mut String, d: &DevInfo) {
    let _ = writeln!(w, "\ttso_caps:");
    let _ = writeln!(w, "\t\tmax_tso:\t\t\t{}", d.tso_caps.max_tso);
    if d.tso_caps.max_tso != 0 {
        let _ = writeln!(w, "\t\tsupported_qp:");
        list(w, &d.tso_caps.supported_qp);
    }
    let r = &d.rss_caps;
    let _ = writeln!(w, "\trss_caps:");
    let _ = writeln!(
        w,
        "\t\tmax_rwq_indirection_tables:\t\t\t{}",
        r.max_rwq_indirection_tables
    );
    let _ = writeln!(
        w,
        "\t\tmax_rwq_indirection_table_size:\t\t\t{}",
        r.max_rwq_indirection_table_size
    );
    let _ = writeln!(w, "\t\trx_hash_function:\t\t\t\t{}", r.rx_hash_function);
    let _ = writeln!(
        w,
        "\t\trx_hash_fields_mask:\t\t\t\t{}",
        r.rx_hash_fields_mask
    );
    if !r.supported_qp.is_empty() {
        let _ = writeln!(w, "\t\tsupported_qp:");
        list(w, &r.supported_qp);
    }
    let _ = writeln!(w, "\tmax_wq_type_rq:\t\t\t{}", d.max_wq_type_rq);
    let p = &d.packet_pacing_caps;
    let _ = writeln!(w, "\tpacket_pacing_caps:");
    let _ = writeln!(w, "\t\tqp_rate_limit_min:\t{}kbps", p.qp_rate_limit_min);
    let _ = writeln!(w, "\t\tqp_rate_limit_max:\t{}kbps", p.qp_rate_limit_max);
    if p.qp_rate_limit_max != 0 {
        let _ = writeln!(w, "\t\tsupported_qp:");
        list(w, &p.supported_qp);
    }
}

/// A port's attributes (`struct ibv_port_attr`) but phys_state, which ibv_devinfo prints
/// only for the InfiniBand transport.
const PORT: &[Row<DevinfoPort>] = &[
    ("state", |p| named(&p.state, p.state_raw)),
    ("max_mtu", |p| named(&p.max_mtu, p.max_mtu_raw)),
    ("active_mtu", |p| named(&p.active_mtu, p.active_mtu_raw)),
    ("sm_lid", |p| value(p.sm_lid)),
    ("port_lid", |p| value(p.port_lid)),
    ("port_lmc", |p| value(&p.port_lmc)),
    ("link_layer", |p| value(&p.link_layer)),
    ("max_msg_sz", |p| value(&p.max_msg_sz)),
    ("port_cap_flags", |p| value(&p.port_cap_flags)),
    ("port_cap_flags2", |p| value(&p.port_cap_flags2)),
    ("max_vl_num", |p| named(&p.max_vl_num, p.max_vl_num_raw)),
    ("bad_pkey_cntr", |p| value(&p.bad_pkey_cntr)),
    ("qkey_viol_cntr", |p| value(&p.qkey_viol_cntr)),
    ("sm_sl", |p| value(p.sm_sl)),
    ("pkey_tbl_len", |p| value(p.pkey_tbl_len)),
    ("gid_tbl_len", |p| value(p.gid_tbl_len)),
    ("subnet_timeout", |p| value(p.subnet_timeout)),
    ("init_type_reply", |p| value(p.init_type_reply)),
    ("active_width", |p| {
        named(&p.active_width, p.active_width_raw)
    }),
    ("active_speed", |p| {
        named(&p.active_speed, p.active_speed_raw)
    }),
];

fn render_port(w: &mut String, p: &DevinfoPort, infiniband_transport: bool) {
    let _ = writeln!(w, "\t\tport:\t{}", p.port);
    rows(w, 3, PORT, p);
    if infiniband_transport {
        let (name, raw) = (&p.phys_state, p.phys_state_raw);
        field(w, 3, "phys_state", format!("{name} ({raw})"));
    }
    render_gids(w, &p.gids, p.link_layer == "Ethernet");
    render_port_sysfs(w, &p.sysfs);
    let _ = writeln!(w);
}

fn render_gids(w: &mut String, gids: &[GidInfo], ethernet: bool) {
    for g in gids {
        let Some(gid_type) = &g.gid_type else {
            // ibv_devinfo stays silent here; say what we know instead of dropping it.
            let _ = writeln!(w, "\t\t\tGID[{:3}]:\t\t{}, type unknown", g.index, g.gid);
            continue;
        };
        let suffix = if ethernet {
            match gid_type {
                GidType::RoceV2 => ", RoCE v2".to_string(),
                GidType::Other(t) => format!(", {t}"),
                _ => ", RoCE v1".to_string(),
            }
        } else {
            String::new()
        };
        let _ = writeln!(
            w,
            "\t\t\tGID[{:3}]:\t\t{}{suffix}",
            g.index,
            gid_text(&g.gid, gid_type)
        );
    }
}

/// `key:` indented by `depth` tabs, then tabs up to ibv_devinfo's value column (40 for
/// device fields, 48 for port fields), so added lines line up with the ones it prints.
fn field(w: &mut String, depth: usize, key: &str, value: impl std::fmt::Display) {
    let target = if depth == 1 { 40 } else { 48 };
    let mut col = 8 * depth + key.len() + 1;
    let mut tabs = 0;
    while col < target || tabs == 0 {
        col = (col / 8 + 1) * 8;
        tabs += 1;
    }
    let _ = writeln!(
        w,
        "{}{key}:{}{value}",
        "\t".repeat(depth),
        "\t".repeat(tabs)
    );
}

/// The sysfs lines after ibv_devinfo's own, so a diff against it shows only additions.
fn render_device_sysfs(w: &mut String, driver: Option<&str>, uverbs: Option<&str>) {
    if let Some(driver) = driver {
        field(w, 1, "driver", driver);
    }
    if let Some(uverbs) = uverbs {
        field(w, 1, "uverbs", format!("/dev/infiniband/{uverbs}"));
    }
}

fn render_port_sysfs(w: &mut String, s: &PortSysfs) {
    if let Some(rate) = &s.rate {
        field(w, 3, "rate", rate);
    }
    if let Some(netdev) = &s.netdev {
        let mut details = Vec::new();
        if let Some(state) = &s.netdev_operstate {
            details.push(state.to_string());
        }
        if let Some(mtu) = s.netdev_mtu {
            details.push(format!("mtu {mtu}"));
        }
        let details = if details.is_empty() {
            String::new()
        } else {
            format!(" ({})", details.join(", "))
        };
        field(w, 3, "netdev", format!("{netdev}{details}"));
    }
    if !s.gid_netdevs.is_empty() && s.gid_netdevs.as_slice() != s.netdev.as_slice() {
        field(w, 3, "gid_netdevs", s.gid_netdevs.join(", "));
    }
    if !s.pkeys.is_empty() {
        field(
            w,
            3,
            "pkeys",
            crate::render::inventory::show_pkeys(&s.pkeys),
        );
    }
}

/// GID text as ibv_devinfo prints it: inet_ntop for RoCE v2, hex groups otherwise.
fn gid_text(gid: &Gid, gid_type: &GidType) -> String {
    if *gid_type != GidType::RoceV2 {
        return gid.sysfs_form();
    }
    let b = &gid.0;
    // glibc writes ::a.b.c.d (IPv4-compatible) where Rust writes hex groups.
    if b[..12] == [0; 12] && b[12..14] != [0, 0] {
        return format!("::{}.{}.{}.{}", b[12], b[13], b[14], b[15]);
    }
    gid.ipv6().to_string()
}

/// `value (raw)` as ibv_devinfo writes enumerated values, or "-" when sysfs lacks it.
fn with_raw<R: std::fmt::Display>(value: &Option<String>, raw: Option<R>) -> String {
    match (value, raw) {
        (Some(v), Some(r)) => format!("{v} ({r})"),
        _ => "-".to_string(),
    }
}

fn or_dash<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// The fields of `DEVICE` sysfs has, "-" where a device lacks one.
const SYSFS_DEVICE: &[Row<SysfsDevInfo>] = &[
    ("transport", |d| {
        value(with_raw(&d.transport, d.transport_raw))
    }),
    ("fw_ver", |d| if_some(&d.fw_ver)),
    ("node_guid", |d| value(or_dash(&d.node_guid))),
    ("sys_image_guid", |d| value(or_dash(&d.sys_image_guid))),
    ("hw_ver", |d| if_some(&d.hw_ver)),
    ("board_id", |d| if_some(&d.board_id)),
    ("phys_port_cnt", |d| value(d.phys_port_cnt)),
];

/// The fields of `PORT` sysfs has, and phys_state.
const SYSFS_PORT: &[Row<SysfsPortInfo>] = &[
    ("state", |p| value(with_raw(&p.state, p.state_raw))),
    ("sm_lid", |p| value(or_dash(&p.sm_lid))),
    ("port_lid", |p| value(or_dash(&p.port_lid))),
    ("port_lmc", |p| value(or_dash(&p.port_lmc))),
    ("link_layer", |p| value(or_dash(&p.link_layer))),
    ("port_cap_flags", |p| value(or_dash(&p.port_cap_flags))),
    ("sm_sl", |p| value(or_dash(&p.sm_sl))),
    ("active_width", |p| {
        value(with_raw(&p.active_width, p.active_width_raw))
    }),
    ("active_speed", |p| {
        value(with_raw(&p.active_speed, p.active_speed_raw))
    }),
    ("phys_state", |p| {
        value(with_raw(&p.phys_state, p.phys_state_raw))
    }),
];

/// ibv_devinfo's layout for the fields sysfs has; the note on stderr lists the rest.
fn render_sysfs(d: &SysfsDevInfo) -> String {
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(w, "hca_id:\t{}", d.device);
    rows(w, 1, SYSFS_DEVICE, d);
    render_device_sysfs(w, d.driver.as_deref(), d.uverbs.as_deref());
    for p in &d.ports {
        let _ = writeln!(w, "\t\tport:\t{}", p.port);
        rows(w, 3, SYSFS_PORT, p);
        render_gids(w, &p.gids, p.link_layer.as_deref() == Some("Ethernet"));
        render_port_sysfs(w, &p.sysfs);
        let _ = writeln!(w);
    }
    o
}

/// The stderr note: which devices lack verbs, why, and which fields that costs. One line
/// per distinct reason, so a host without libibverbs gets one line, not one per device.
/// On a captured tree verbs are never asked, so the line only says that their fields are
/// absent (the JSON still lists them in `verbs.missing_fields`).
fn missing_notes(views: &[DevView], captured: bool) -> Vec<String> {
    let mut by_reason: Vec<(String, Vec<String>)> = Vec::new();
    for v in views {
        let DevView::Sysfs(d) = v else { continue };
        let reason = d.verbs.reason.clone().unwrap_or_default();
        match by_reason.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, names)) => names.push(d.device.clone()),
            None => by_reason.push((reason, vec![d.device.clone()])),
        }
    }
    by_reason
        .into_iter()
        .map(|(reason, names)| {
            if captured {
                return format!(
                    "{}: {}; shown from sysfs, without the fields only verbs report",
                    names.join(", "),
                    reason.trim_end_matches('.')
                );
            }
            format!(
                "{}: verbs unavailable: {}; shown from sysfs, missing: {}; per port: {}",
                names.join(", "),
                reason.trim_end_matches('.'),
                MISSING_DEVICE_FIELDS.join(", "),
                MISSING_PORT_FIELDS.join(", ")
            )
        })
        .collect()
}

/// The same notes as stderr lines.
pub fn missing_notes_text(views: &[DevView], captured: bool) -> String {
    missing_notes(views, captured)
        .iter()
        .map(|note| format!("rdmactl: note: {note}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gather::devinfo::fixture::{rxe0, sysfs_devices};
    use crate::gather::devinfo::{from_sysfs, merge_sysfs};
    use crate::gather::sysfs::SysfsRoot;

    /// The human output is ibv_devinfo -v's text, byte for byte, on a real capture.
    #[test]
    fn render_matches_captured_ibv_devinfo_for_rxe0() {
        let info = rxe0();
        let captured = include_str!("../../tests/fixtures/devinfo/rxe0-ibv_devinfo-v.txt");
        let ours = render(&info);
        for (i, (a, b)) in ours.lines().zip(captured.lines()).enumerate() {
            assert_eq!(a, b, "line {}", i + 1);
        }
        assert_eq!(ours.lines().count(), captured.lines().count());
    }

    /// Lines sysfs adds after ibv_devinfo's own.
    fn is_sysfs_line(line: &str) -> bool {
        let key = line.trim_start().split(':').next().unwrap_or("");
        ["driver", "uverbs", "rate", "netdev", "gid_netdevs", "pkeys"].contains(&key)
    }

    /// Without verbs, every line that is not a sysfs addition is one ibv_devinfo printed,
    /// byte for byte, on the same capture: the values and the layout are ibv_devinfo's.
    #[test]
    fn sysfs_fallback_lines_are_ibv_devinfo_lines_of_the_same_capture() {
        let captured = include_str!("../../tests/fixtures/sysfs/rxe-vm-basic/ibv_devinfo-v.txt");
        for d in sysfs_devices("rxe-vm-basic") {
            let ours = render_sysfs(&from_sysfs(&d, "test".into()));
            let mut compared = 0;
            for line in ours.lines().filter(|l| !l.is_empty() && !is_sysfs_line(l)) {
                assert!(
                    captured.lines().any(|c| c == line),
                    "{}: {line:?} is not in ibv_devinfo's output",
                    d.name
                );
                compared += 1;
            }
            assert!(compared >= 15, "{}: only {compared} lines", d.name);
            assert!(ours.contains("netdev:\t\t\tveth"), "{ours}");
        }
    }

    /// Merged output: ibv_devinfo's text unchanged, sysfs lines only added; JSON gains
    /// the netdev per port and per GID.
    #[test]
    fn merged_view_adds_sysfs_without_changing_ibv_devinfo_lines() {
        let mut info = rxe0();
        let plain = render(&info);
        let root = SysfsRoot::new(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/sysfs/rxe-veth-basic"),
        );
        let dev = root.clone().netdev_only().devices().unwrap().remove(0);
        merge_sysfs(&mut info, &dev, &root);
        let merged = render(&info);
        let kept: Vec<&str> = merged.lines().filter(|l| !is_sysfs_line(l)).collect();
        assert_eq!(kept, plain.lines().collect::<Vec<_>>());
        assert!(
            merged.contains("\t\t\tnetdev:\t\t\tveth0 (up, mtu 1500)\n"),
            "{merged}"
        );
        assert!(
            merged.contains("\tuverbs:\t\t\t\t/dev/infiniband/uverbs0\n"),
            "{merged}"
        );
        let v = serde_json::to_value(&info).unwrap();
        assert_eq!(v["verbs"]["available"], true);
        assert_eq!(v["uverbs"], "uverbs0");
        assert_eq!(v["ports"][0]["netdev"], "veth0");
        assert_eq!(v["ports"][0]["netdev_mtu"], 1500);
        assert_eq!(v["ports"][0]["gids"][1]["netdev"], "veth0");
        assert_eq!(v["ports"][0]["gid_netdevs"], serde_json::json!(["veth0"]));
    }

    /// `key` of each row in `json`, in the rows' order.
    fn keys_in_order<T>(table: &[Row<T>], json: &str) {
        let mut from = 0;
        for (name, _) in table {
            let at = json[from..]
                .find(&format!("\"{name}\":"))
                .unwrap_or_else(|| panic!("{name} is not a JSON key after {from} in {json}"));
            from += at;
        }
    }

    /// Each table names its fields as the JSON does, in its order; what the sysfs view lacks
    /// of the verbs tables is what the note and `verbs.missing_fields` list.
    #[test]
    fn rows_are_json_keys_and_the_sysfs_gap_is_the_missing_list() {
        let info = rxe0();
        keys_in_order(DEVICE, &serde_json::to_string(&info).unwrap());
        keys_in_order(PORT, &serde_json::to_string(&info.ports[0]).unwrap());
        let sysfs = from_sysfs(&sysfs_devices("rxe-vm-basic")[0], "test".into());
        keys_in_order(SYSFS_DEVICE, &serde_json::to_string(&sysfs).unwrap());
        keys_in_order(SYSFS_PORT, &serde_json::to_string(&sysfs.ports[0]).unwrap());

        fn lacking<'a, T, U>(verbs: &'a [Row<T>], sysfs: &[Row<U>]) -> Vec<&'a str> {
            let has = |n: &str| sysfs.iter().any(|(s, _)| *s == n);
            verbs.iter().map(|(n, _)| *n).filter(|n| !has(n)).collect()
        }
        let device = lacking(DEVICE, SYSFS_DEVICE);
        assert_eq!(MISSING_DEVICE_FIELDS[..device.len()], device);
        assert_eq!(MISSING_PORT_FIELDS, lacking(PORT, SYSFS_PORT));
        // Everything the sysfs view shows is a verbs field (phys_state, printed apart).
        assert_eq!(lacking(SYSFS_DEVICE, DEVICE), Vec::<&str>::new());
        assert_eq!(lacking(SYSFS_PORT, PORT), ["phys_state"]);
    }

    #[test]
    fn notes_group_devices_by_reason() {
        let devs = sysfs_devices("rxe-veth-basic");
        let views = vec![
            DevView::Sysfs(Box::new(from_sysfs(&devs[0], "no libibverbs.".into()))),
            DevView::Sysfs(Box::new(from_sysfs(&devs[1], "no libibverbs.".into()))),
        ];
        let notes = missing_notes(&views, false);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with(
            "rxe0, rxe1: verbs unavailable: no libibverbs; shown from sysfs, missing: vendor_id,"
        ));
        assert!(notes[0].ends_with("subnet_timeout, init_type_reply"));
        // A captured tree: one short line, no field list.
        let views = vec![DevView::Sysfs(Box::new(from_sysfs(
            &devs[0],
            "--sysfs T is a captured tree".into(),
        )))];
        assert_eq!(
            missing_notes(&views, true),
            ["rxe0: --sysfs T is a captured tree; shown from sysfs, without the fields only verbs report"]
        );
        let listed = crate::gather::inventory::not_listed(&devs[0], &["rxe1".to_string()]);
        assert!(
            listed.starts_with("not listed by libibverbs (which lists rxe1): no provider"),
            "{listed}"
        );
    }

    #[test]
    fn added_lines_use_ibv_devinfo_columns() {
        let mut w = String::new();
        field(&mut w, 1, "max_qp", 1);
        field(&mut w, 1, "max_total_mcast_qp_attach", 2);
        field(&mut w, 3, "state", 3);
        field(&mut w, 3, "port_cap_flags2", 4);
        assert_eq!(
            w,
            "\tmax_qp:\t\t\t\t1\n\tmax_total_mcast_qp_attach:\t2\n\t\t\tstate:\t\t\t3\n\t\t\tport_cap_flags2:\t4\n"
        );
    }

    #[test]
    fn gid_text_follows_inet_ntop_for_roce_v2_and_hex_otherwise() {
        let g = Gid::parse("::ffff:192.168.77.1").unwrap();
        assert_eq!(gid_text(&g, &GidType::RoceV2), "::ffff:192.168.77.1");
        assert_eq!(
            gid_text(&g, &GidType::RoceV1),
            "0000:0000:0000:0000:0000:ffff:c0a8:4d01"
        );
        let compat = Gid::parse("::c0a8:4d01").unwrap();
        assert_eq!(gid_text(&compat, &GidType::RoceV2), "::192.168.77.1");
        let ll = Gid::parse("fe80::1:2").unwrap();
        assert_eq!(gid_text(&ll, &GidType::RoceV2), "fe80::1:2");
    }
}
