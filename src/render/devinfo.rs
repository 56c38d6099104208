//! `devices -v` as text, in ibv_devinfo -v's layout (so the two diff line by line, sysfs's
//! lines only added), and as JSON; the stderr note on what a sysfs-only view lacks.

use std::fmt::Write as _;

use crate::model::device::GidType;
use crate::model::devinfo::{
    DevInfo, DevView, DevinfoPort, GidInfo, PortSysfs, SysfsDevInfo, MISSING_DEVICE_FIELDS,
    MISSING_PORT_FIELDS,
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
    device_limits(w, d);
    device_caps(w, d);
    render_device_sysfs(w, d.driver.as_deref(), d.uverbs.as_deref());
    for port in &d.ports {
        render_port(w, port, d.transport_raw == 0);
    }
    o
}

/// The attributes of `struct ibv_device_attr`: identity and limits, hca_id's block up to
/// local_ca_ack_delay.
fn device_limits(w: &mut String, d: &DevInfo) {
    let _ = writeln!(w, "\ttransport:\t\t\t{} ({})", d.transport, d.transport_raw);
    if let Some(fw) = &d.fw_ver {
        let _ = writeln!(w, "\tfw_ver:\t\t\t\t{fw}");
    }
    let _ = writeln!(w, "\tnode_guid:\t\t\t{}", d.node_guid);
    let _ = writeln!(w, "\tsys_image_guid:\t\t\t{}", d.sys_image_guid);
    let _ = writeln!(w, "\tvendor_id:\t\t\t{}", d.vendor_id);
    let _ = writeln!(w, "\tvendor_part_id:\t\t\t{}", d.vendor_part_id);
    let _ = writeln!(w, "\thw_ver:\t\t\t\t{}", d.hw_ver);
    if let Some(board) = &d.board_id {
        let _ = writeln!(w, "\tboard_id:\t\t\t{board}");
    }
    let _ = writeln!(w, "\tphys_port_cnt:\t\t\t{}", d.phys_port_cnt);
    let _ = writeln!(w, "\tmax_mr_size:\t\t\t{}", d.max_mr_size);
    let _ = writeln!(w, "\tpage_size_cap:\t\t\t{}", d.page_size_cap);
    let _ = writeln!(w, "\tmax_qp:\t\t\t\t{}", d.max_qp);
    let _ = writeln!(w, "\tmax_qp_wr:\t\t\t{}", d.max_qp_wr);
    let _ = writeln!(w, "\tdevice_cap_flags:\t\t{}", d.device_cap_flags);
    list(w, &d.device_cap_flags_decoded);
    let _ = writeln!(w, "\tmax_sge:\t\t\t{}", d.max_sge);
    let _ = writeln!(w, "\tmax_sge_rd:\t\t\t{}", d.max_sge_rd);
    let _ = writeln!(w, "\tmax_cq:\t\t\t\t{}", d.max_cq);
    let _ = writeln!(w, "\tmax_cqe:\t\t\t{}", d.max_cqe);
    let _ = writeln!(w, "\tmax_mr:\t\t\t\t{}", d.max_mr);
    let _ = writeln!(w, "\tmax_pd:\t\t\t\t{}", d.max_pd);
    let _ = writeln!(w, "\tmax_qp_rd_atom:\t\t\t{}", d.max_qp_rd_atom);
    let _ = writeln!(w, "\tmax_ee_rd_atom:\t\t\t{}", d.max_ee_rd_atom);
    let _ = writeln!(w, "\tmax_res_rd_atom:\t\t{}", d.max_res_rd_atom);
    let _ = writeln!(w, "\tmax_qp_init_rd_atom:\t\t{}", d.max_qp_init_rd_atom);
    let _ = writeln!(w, "\tmax_ee_init_rd_atom:\t\t{}", d.max_ee_init_rd_atom);
    let _ = writeln!(
        w,
        "\tatomic_cap:\t\t\t{} ({})",
        d.atomic_cap, d.atomic_cap_raw
    );
    let _ = writeln!(w, "\tmax_ee:\t\t\t\t{}", d.max_ee);
    let _ = writeln!(w, "\tmax_rdd:\t\t\t{}", d.max_rdd);
    let _ = writeln!(w, "\tmax_mw:\t\t\t\t{}", d.max_mw);
    let _ = writeln!(w, "\tmax_raw_ipv6_qp:\t\t{}", d.max_raw_ipv6_qp);
    let _ = writeln!(w, "\tmax_raw_ethy_qp:\t\t{}", d.max_raw_ethy_qp);
    let _ = writeln!(w, "\tmax_mcast_grp:\t\t\t{}", d.max_mcast_grp);
    let _ = writeln!(w, "\tmax_mcast_qp_attach:\t\t{}", d.max_mcast_qp_attach);
    let _ = writeln!(
        w,
        "\tmax_total_mcast_qp_attach:\t{}",
        d.max_total_mcast_qp_attach
    );
    let _ = writeln!(w, "\tmax_ah:\t\t\t\t{}", d.max_ah);
    let _ = writeln!(w, "\tmax_fmr:\t\t\t{}", d.max_fmr);
    if d.max_fmr != 0 {
        let _ = writeln!(w, "\tmax_map_per_fmr:\t\t{}", d.max_map_per_fmr);
    }
    let _ = writeln!(w, "\tmax_srq:\t\t\t{}", d.max_srq);
    if d.max_srq != 0 {
        let _ = writeln!(w, "\tmax_srq_wr:\t\t\t{}", d.max_srq_wr);
        let _ = writeln!(w, "\tmax_srq_sge:\t\t\t{}", d.max_srq_sge);
    }
    let _ = writeln!(w, "\tmax_pkeys:\t\t\t{}", d.max_pkeys);
    let _ = writeln!(w, "\tlocal_ca_ack_delay:\t\t{}", d.local_ca_ack_delay);
}

/// The attributes of `struct ibv_device_attr_ex`: ODP, offloads, tag matching, moderation,
/// device memory.
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

fn render_port(w: &mut String, p: &DevinfoPort, infiniband_transport: bool) {
    let _ = writeln!(w, "\t\tport:\t{}", p.port);
    let _ = writeln!(w, "\t\t\tstate:\t\t\t{} ({})", p.state, p.state_raw);
    let _ = writeln!(w, "\t\t\tmax_mtu:\t\t{} ({})", p.max_mtu, p.max_mtu_raw);
    let _ = writeln!(
        w,
        "\t\t\tactive_mtu:\t\t{} ({})",
        p.active_mtu, p.active_mtu_raw
    );
    let _ = writeln!(w, "\t\t\tsm_lid:\t\t\t{}", p.sm_lid);
    let _ = writeln!(w, "\t\t\tport_lid:\t\t{}", p.port_lid);
    let _ = writeln!(w, "\t\t\tport_lmc:\t\t{}", p.port_lmc);
    let _ = writeln!(w, "\t\t\tlink_layer:\t\t{}", p.link_layer);
    let _ = writeln!(w, "\t\t\tmax_msg_sz:\t\t{}", p.max_msg_sz);
    let _ = writeln!(w, "\t\t\tport_cap_flags:\t\t{}", p.port_cap_flags);
    let _ = writeln!(w, "\t\t\tport_cap_flags2:\t{}", p.port_cap_flags2);
    let _ = writeln!(
        w,
        "\t\t\tmax_vl_num:\t\t{} ({})",
        p.max_vl_num, p.max_vl_num_raw
    );
    let _ = writeln!(w, "\t\t\tbad_pkey_cntr:\t\t{}", p.bad_pkey_cntr);
    let _ = writeln!(w, "\t\t\tqkey_viol_cntr:\t\t{}", p.qkey_viol_cntr);
    let _ = writeln!(w, "\t\t\tsm_sl:\t\t\t{}", p.sm_sl);
    let _ = writeln!(w, "\t\t\tpkey_tbl_len:\t\t{}", p.pkey_tbl_len);
    let _ = writeln!(w, "\t\t\tgid_tbl_len:\t\t{}", p.gid_tbl_len);
    let _ = writeln!(w, "\t\t\tsubnet_timeout:\t\t{}", p.subnet_timeout);
    let _ = writeln!(w, "\t\t\tinit_type_reply:\t{}", p.init_type_reply);
    let _ = writeln!(
        w,
        "\t\t\tactive_width:\t\t{} ({})",
        p.active_width, p.active_width_raw
    );
    let _ = writeln!(
        w,
        "\t\t\tactive_speed:\t\t{} ({})",
        p.active_speed, p.active_speed_raw
    );
    if infiniband_transport {
        let _ = writeln!(
            w,
            "\t\t\tphys_state:\t\t{} ({})",
            p.phys_state, p.phys_state_raw
        );
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

/// ibv_devinfo's layout for the fields sysfs has; the note on stderr lists the rest.
fn render_sysfs(d: &SysfsDevInfo) -> String {
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(w, "hca_id:\t{}", d.device);
    field(w, 1, "transport", with_raw(&d.transport, d.transport_raw));
    if let Some(fw) = &d.fw_ver {
        field(w, 1, "fw_ver", fw);
    }
    field(w, 1, "node_guid", or_dash(&d.node_guid));
    field(w, 1, "sys_image_guid", or_dash(&d.sys_image_guid));
    if let Some(hw) = &d.hw_ver {
        field(w, 1, "hw_ver", hw);
    }
    if let Some(board) = &d.board_id {
        field(w, 1, "board_id", board);
    }
    field(w, 1, "phys_port_cnt", d.phys_port_cnt);
    render_device_sysfs(w, d.driver.as_deref(), d.uverbs.as_deref());
    for p in &d.ports {
        let _ = writeln!(w, "\t\tport:\t{}", p.port);
        field(w, 3, "state", with_raw(&p.state, p.state_raw));
        field(w, 3, "sm_lid", or_dash(&p.sm_lid));
        field(w, 3, "port_lid", or_dash(&p.port_lid));
        field(w, 3, "port_lmc", or_dash(&p.port_lmc));
        field(w, 3, "link_layer", or_dash(&p.link_layer));
        field(w, 3, "port_cap_flags", or_dash(&p.port_cap_flags));
        field(w, 3, "sm_sl", or_dash(&p.sm_sl));
        field(
            w,
            3,
            "active_width",
            with_raw(&p.active_width, p.active_width_raw),
        );
        field(
            w,
            3,
            "active_speed",
            with_raw(&p.active_speed, p.active_speed_raw),
        );
        field(
            w,
            3,
            "phys_state",
            with_raw(&p.phys_state, p.phys_state_raw),
        );
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
