//! DCB over rtnetlink (`RTM_GETDCB`, uapi linux/dcbnl.h): a netdev's IEEE PFC, ETS, APP
//! table, trust order, buffers and DCBX mode. The codec is pure, on netlink-packet-core;
//! `read` alone touches a socket.
//!
//! The kernel's reply (net/dcb/dcbnl.c `dcbnl_ieee_fill`) is one message: `struct dcbmsg`,
//! `DCB_ATTR_IFNAME`, a `DCB_ATTR_IEEE` nest holding the driver's structures and tables,
//! then `DCB_ATTR_DCBX`. The nests of `DCB_ATTR_IEEE`, the APP table and the peer's APP
//! table are opened without `NLA_F_NESTED`, the trust and rewrite tables with it; the
//! decoder accepts either on every nest.

use std::path::Path;

use netlink_packet_core::{
    DecodeError, DefaultNla, Emitable, NetlinkDeserializable, NetlinkHeader, NetlinkMessage,
    NetlinkPayload, NetlinkSerializable, Nla, NlaBuffer, NlasIterator, Parseable, NLA_F_NESTED,
    NLM_F_REQUEST,
};

use crate::model::qos::{DcbApp, DcbBuffer, DcbConfig, Ets, Pfc, Probe, APP_SEL_PCP};

/// include/uapi/linux/rtnetlink.h.
const RTM_GETDCB: u16 = 78;
const RTM_SETDCB: u16 = 79;
/// include/uapi/linux/dcbnl.h `enum dcbnl_commands`.
const DCB_CMD_IEEE_GET: u8 = 21;
const DCB_CMD_GDCBX: u8 = 22;
/// `enum dcbnl_attrs`.
const DCB_ATTR_IFNAME: u16 = 1;
const DCB_ATTR_IEEE: u16 = 13;
const DCB_ATTR_DCBX: u16 = 14;
/// `enum ieee_attrs`, inside `DCB_ATTR_IEEE`.
const DCB_ATTR_IEEE_ETS: u16 = 1;
const DCB_ATTR_IEEE_PFC: u16 = 2;
const DCB_ATTR_IEEE_APP_TABLE: u16 = 3;
const DCB_ATTR_IEEE_PEER_ETS: u16 = 4;
const DCB_ATTR_IEEE_PEER_PFC: u16 = 5;
const DCB_ATTR_IEEE_PEER_APP: u16 = 6;
const DCB_ATTR_IEEE_MAXRATE: u16 = 7;
const DCB_ATTR_DCB_BUFFER: u16 = 10;
const DCB_ATTR_DCB_APP_TRUST_TABLE: u16 = 11;
/// `enum ieee_attrs_app`: an APP (or trust) entry of an IEEE selector, and of the
/// non-standard PCP selector.
const DCB_ATTR_IEEE_APP: u16 = 1;
const DCB_ATTR_DCB_APP: u16 = 2;

/// The structures' sizes: `struct ieee_ets` (3 + 7 × 8), `struct ieee_pfc` (u64s from
/// offset 8), `struct dcb_app`, `struct ieee_maxrate`, `struct dcbnl_buffer`.
const IEEE_ETS_LEN: usize = 59;
const IEEE_PFC_LEN: usize = 136;
const DCB_APP_LEN: usize = 4;
const IEEE_MAXRATE_LEN: usize = 64;
const DCBNL_BUFFER_LEN: usize = 44;

const EOPNOTSUPP: i32 = 95;
const ENODEV: i32 = 19;

/// A DCB message: `struct dcbmsg` (family AF_UNSPEC, the command, padding) and its
/// attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DcbMessage {
    pub cmd: u8,
    pub attributes: Vec<DcbAttribute>,
}

/// A top-level attribute (`enum dcbnl_attrs`); the rest are kept undecoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DcbAttribute {
    IfName(String),
    Ieee(Vec<IeeeAttribute>),
    Dcbx(u8),
    Other(DefaultNla),
}

/// An attribute inside `DCB_ATTR_IEEE` (`enum ieee_attrs`). QCN, its statistics and the
/// rewrite table are kept undecoded: nothing rdmactl judges reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IeeeAttribute {
    Ets(Ets),
    Pfc(Pfc),
    AppTable(Vec<DcbApp>),
    PeerEts(Ets),
    PeerPfc(Pfc),
    PeerApp(Vec<DcbApp>),
    Maxrate([u64; 8]),
    Buffer(DcbBuffer),
    /// The trusted selectors, in the order the NIC consults them.
    AppTrust(Vec<u8>),
    Other(DefaultNla),
}

/// What a buffer of replies to `RTM_GETDCB` says.
// One is made per netdev read and none is stored in bulk, so the size is no cost.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DcbReply {
    Config(DcbConfig),
    /// The kernel refused: its errno (positive), and the netdev named in the request it
    /// echoes back, when it does.
    Errno {
        errno: i32,
        ifname: Option<String>,
    },
}

fn too_short(what: &str, len: usize, need: usize) -> DecodeError {
    DecodeError::from(format!("{what}: {len} bytes, shorter than its {need}"))
}

/// `N` bytes at `at`; the callers check the length first, and this checks again rather
/// than trust them.
fn bytes<const N: usize>(buf: &[u8], at: usize, what: &str) -> Result<[u8; N], DecodeError> {
    buf.get(at..at + N)
        .and_then(|b| <[u8; N]>::try_from(b).ok())
        .ok_or_else(|| too_short(what, buf.len(), at + N))
}

fn u64s(buf: &[u8], at: usize, what: &str) -> Result<[u64; 8], DecodeError> {
    let mut out = [0u64; 8];
    for (i, v) in out.iter_mut().enumerate() {
        *v = u64::from_ne_bytes(bytes(buf, at + 8 * i, what)?);
    }
    Ok(out)
}

/// A structure's payload: at least `need` bytes (a newer kernel may append fields, so more
/// is accepted and the known prefix read).
fn sized<'a>(value: &'a [u8], need: usize, what: &str) -> Result<&'a [u8], DecodeError> {
    if value.len() < need {
        return Err(too_short(what, value.len(), need));
    }
    Ok(value)
}

fn parse_ets(value: &[u8], what: &str) -> Result<Ets, DecodeError> {
    let v = sized(value, IEEE_ETS_LEN, what)?;
    let [willing, ets_cap, cbs] = bytes(v, 0, what)?;
    let arr = |i: usize| bytes::<8>(v, 3 + 8 * i, what);
    Ok(Ets {
        willing: willing != 0,
        ets_cap,
        cbs,
        tc_tx_bw: arr(0)?,
        tc_rx_bw: arr(1)?,
        tc_tsa: arr(2)?,
        prio_tc: arr(3)?,
        tc_reco_bw: arr(4)?,
        tc_reco_tsa: arr(5)?,
        reco_prio_tc: arr(6)?,
    })
}

fn emit_ets(e: &Ets, buf: &mut [u8]) {
    buf[..3].copy_from_slice(&[u8::from(e.willing), e.ets_cap, e.cbs]);
    let arrays = [
        &e.tc_tx_bw,
        &e.tc_rx_bw,
        &e.tc_tsa,
        &e.prio_tc,
        &e.tc_reco_bw,
        &e.tc_reco_tsa,
        &e.reco_prio_tc,
    ];
    for (i, a) in arrays.iter().enumerate() {
        buf[3 + 8 * i..11 + 8 * i].copy_from_slice(&a[..]);
    }
}

fn parse_pfc(value: &[u8], what: &str) -> Result<Pfc, DecodeError> {
    let v = sized(value, IEEE_PFC_LEN, what)?;
    let [pfc_cap, pfc_en, mbc, _] = bytes(v, 0, what)?;
    Ok(Pfc {
        pfc_cap,
        pfc_en,
        mbc,
        delay: u16::from_ne_bytes(bytes(v, 4, what)?),
        requests: u64s(v, 8, what)?,
        indications: u64s(v, 72, what)?,
    })
}

fn emit_pfc(p: &Pfc, buf: &mut [u8]) {
    buf[..IEEE_PFC_LEN].fill(0);
    buf[..3].copy_from_slice(&[p.pfc_cap, p.pfc_en, p.mbc]);
    buf[4..6].copy_from_slice(&p.delay.to_ne_bytes());
    for (i, v) in p.requests.iter().chain(&p.indications).enumerate() {
        buf[8 + 8 * i..16 + 8 * i].copy_from_slice(&v.to_ne_bytes());
    }
}

fn parse_buffer(value: &[u8]) -> Result<DcbBuffer, DecodeError> {
    let what = "DCB_ATTR_DCB_BUFFER (struct dcbnl_buffer)";
    let v = sized(value, DCBNL_BUFFER_LEN, what)?;
    let mut buffer_size = [0u32; 8];
    for (i, s) in buffer_size.iter_mut().enumerate() {
        *s = u32::from_ne_bytes(bytes(v, 8 + 4 * i, what)?);
    }
    Ok(DcbBuffer {
        prio2buffer: bytes(v, 0, what)?,
        buffer_size,
        total_size: u32::from_ne_bytes(bytes(v, 40, what)?),
    })
}

fn emit_buffer(b: &DcbBuffer, buf: &mut [u8]) {
    buf[..8].copy_from_slice(&b.prio2buffer);
    for (i, s) in b.buffer_size.iter().chain([&b.total_size]).enumerate() {
        buf[8 + 4 * i..12 + 4 * i].copy_from_slice(&s.to_ne_bytes());
    }
}

/// The entry type the kernel gives a selector (`dcbnl_app_attr_type_get`).
fn app_entry_kind(selector: u8) -> u16 {
    if selector == APP_SEL_PCP {
        DCB_ATTR_DCB_APP
    } else {
        DCB_ATTR_IEEE_APP
    }
}

/// The entries of a nested table (APP, peer APP, trust): those of an entry type, each
/// parsed by `entry`; other types are stepped over, as the kernel does.
fn parse_table<T>(
    value: &[u8],
    what: &str,
    entry: impl Fn(&[u8]) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    let mut out = Vec::new();
    for nla in NlasIterator::new(value) {
        let nla = nla.map_err(|e| DecodeError::from(format!("{what}: {e}")))?;
        if matches!(nla.kind(), DCB_ATTR_IEEE_APP | DCB_ATTR_DCB_APP) {
            out.push(entry(nla.value())?);
        }
    }
    Ok(out)
}

fn parse_apps(value: &[u8], what: &str) -> Result<Vec<DcbApp>, DecodeError> {
    parse_table(value, what, |v| {
        let entry = format!("{what} entry (struct dcb_app)");
        let [selector, priority, p0, p1] = bytes(sized(v, DCB_APP_LEN, &entry)?, 0, &entry)?;
        Ok(DcbApp {
            selector,
            priority,
            protocol: u16::from_ne_bytes([p0, p1]),
        })
    })
}

/// One APP entry, for emitting.
struct AppEntry(DcbApp);

impl Nla for AppEntry {
    fn value_len(&self) -> usize {
        DCB_APP_LEN
    }
    fn kind(&self) -> u16 {
        app_entry_kind(self.0.selector)
    }
    fn emit_value(&self, buf: &mut [u8]) {
        let p = self.0.protocol.to_ne_bytes();
        buf.copy_from_slice(&[self.0.selector, self.0.priority, p[0], p[1]]);
    }
}

/// One trust entry (a selector), for emitting.
struct TrustEntry(u8);

impl Nla for TrustEntry {
    fn value_len(&self) -> usize {
        1
    }
    fn kind(&self) -> u16 {
        app_entry_kind(self.0)
    }
    fn emit_value(&self, buf: &mut [u8]) {
        buf[0] = self.0;
    }
}

fn app_entries(apps: &[DcbApp]) -> Vec<AppEntry> {
    apps.iter().map(|a| AppEntry(*a)).collect()
}

fn trust_entries(selectors: &[u8]) -> Vec<TrustEntry> {
    selectors.iter().map(|s| TrustEntry(*s)).collect()
}

impl Nla for IeeeAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Ets(_) | Self::PeerEts(_) => IEEE_ETS_LEN,
            Self::Pfc(_) | Self::PeerPfc(_) => IEEE_PFC_LEN,
            Self::AppTable(a) | Self::PeerApp(a) => app_entries(a).as_slice().buffer_len(),
            Self::Maxrate(_) => IEEE_MAXRATE_LEN,
            Self::Buffer(_) => DCBNL_BUFFER_LEN,
            Self::AppTrust(s) => trust_entries(s).as_slice().buffer_len(),
            Self::Other(nla) => nla.value_len(),
        }
    }

    /// The type, with `NLA_F_NESTED` where the kernel sets it (only the trust table of
    /// those decoded).
    fn kind(&self) -> u16 {
        match self {
            Self::Ets(_) => DCB_ATTR_IEEE_ETS,
            Self::Pfc(_) => DCB_ATTR_IEEE_PFC,
            Self::AppTable(_) => DCB_ATTR_IEEE_APP_TABLE,
            Self::PeerEts(_) => DCB_ATTR_IEEE_PEER_ETS,
            Self::PeerPfc(_) => DCB_ATTR_IEEE_PEER_PFC,
            Self::PeerApp(_) => DCB_ATTR_IEEE_PEER_APP,
            Self::Maxrate(_) => DCB_ATTR_IEEE_MAXRATE,
            Self::Buffer(_) => DCB_ATTR_DCB_BUFFER,
            Self::AppTrust(_) => DCB_ATTR_DCB_APP_TRUST_TABLE | NLA_F_NESTED,
            Self::Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buf: &mut [u8]) {
        match self {
            Self::Ets(e) | Self::PeerEts(e) => emit_ets(e, buf),
            Self::Pfc(p) | Self::PeerPfc(p) => emit_pfc(p, buf),
            Self::AppTable(a) | Self::PeerApp(a) => app_entries(a).as_slice().emit(buf),
            Self::Maxrate(m) => {
                for (i, v) in m.iter().enumerate() {
                    buf[8 * i..8 * i + 8].copy_from_slice(&v.to_ne_bytes());
                }
            }
            Self::Buffer(b) => emit_buffer(b, buf),
            Self::AppTrust(s) => trust_entries(s).as_slice().emit(buf),
            Self::Other(nla) => nla.emit_value(buf),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for IeeeAttribute {
    fn parse(buf: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let v = buf.value();
        Ok(match buf.kind() {
            DCB_ATTR_IEEE_ETS => Self::Ets(parse_ets(v, "DCB_ATTR_IEEE_ETS (struct ieee_ets)")?),
            DCB_ATTR_IEEE_PFC => Self::Pfc(parse_pfc(v, "DCB_ATTR_IEEE_PFC (struct ieee_pfc)")?),
            DCB_ATTR_IEEE_APP_TABLE => Self::AppTable(parse_apps(v, "DCB_ATTR_IEEE_APP_TABLE")?),
            DCB_ATTR_IEEE_PEER_ETS => {
                Self::PeerEts(parse_ets(v, "DCB_ATTR_IEEE_PEER_ETS (struct ieee_ets)")?)
            }
            DCB_ATTR_IEEE_PEER_PFC => {
                Self::PeerPfc(parse_pfc(v, "DCB_ATTR_IEEE_PEER_PFC (struct ieee_pfc)")?)
            }
            DCB_ATTR_IEEE_PEER_APP => Self::PeerApp(parse_apps(v, "DCB_ATTR_IEEE_PEER_APP")?),
            DCB_ATTR_IEEE_MAXRATE => {
                let what = "DCB_ATTR_IEEE_MAXRATE (struct ieee_maxrate)";
                Self::Maxrate(u64s(sized(v, IEEE_MAXRATE_LEN, what)?, 0, what)?)
            }
            DCB_ATTR_DCB_BUFFER => Self::Buffer(parse_buffer(v)?),
            DCB_ATTR_DCB_APP_TRUST_TABLE => {
                let what = "DCB_ATTR_DCB_APP_TRUST_TABLE";
                Self::AppTrust(parse_table(v, what, |e| {
                    let [selector] = bytes(e, 0, &format!("{what} entry"))?;
                    Ok(selector)
                })?)
            }
            _ => Self::Other(DefaultNla::parse(buf)?),
        })
    }
}

impl Nla for DcbAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::IfName(name) => name.len() + 1,
            Self::Ieee(attrs) => attrs.as_slice().buffer_len(),
            Self::Dcbx(_) => 1,
            Self::Other(nla) => nla.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::IfName(_) => DCB_ATTR_IFNAME,
            Self::Ieee(_) => DCB_ATTR_IEEE,
            Self::Dcbx(_) => DCB_ATTR_DCBX,
            Self::Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buf: &mut [u8]) {
        match self {
            Self::IfName(name) => {
                buf[..name.len()].copy_from_slice(name.as_bytes());
                buf[name.len()] = 0;
            }
            Self::Ieee(attrs) => attrs.as_slice().emit(buf),
            Self::Dcbx(v) => buf[0] = *v,
            Self::Other(nla) => nla.emit_value(buf),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for DcbAttribute {
    fn parse(buf: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let v = buf.value();
        Ok(match buf.kind() {
            DCB_ATTR_IFNAME => {
                let name = v.split(|b| *b == 0).next().unwrap_or_default();
                Self::IfName(String::from_utf8_lossy(name).into_owned())
            }
            DCB_ATTR_IEEE => {
                let mut attrs = Vec::new();
                for nla in NlasIterator::new(v) {
                    let nla = nla.map_err(|e| format!("DCB_ATTR_IEEE: {e}"))?;
                    attrs.push(IeeeAttribute::parse(&nla)?);
                }
                Self::Ieee(attrs)
            }
            DCB_ATTR_DCBX => {
                let [dcbx] = bytes(v, 0, "DCB_ATTR_DCBX (u8)")?;
                Self::Dcbx(dcbx)
            }
            _ => Self::Other(DefaultNla::parse(buf)?),
        })
    }
}

impl DcbMessage {
    /// A request for `cmd` on netdev `ifname`, as iproute2's `dcb` sends it.
    pub fn request(cmd: u8, ifname: &str) -> Self {
        Self {
            cmd,
            attributes: vec![DcbAttribute::IfName(ifname.to_string())],
        }
    }

    /// The payload after the netlink header: `struct dcbmsg` and the attributes.
    pub fn parse(payload: &[u8]) -> Result<Self, DecodeError> {
        let [_family, cmd, _, _] = bytes(payload, 0, "struct dcbmsg")?;
        let mut attributes = Vec::new();
        for nla in NlasIterator::new(payload.get(4..).unwrap_or_default()) {
            attributes.push(DcbAttribute::parse(&nla?)?);
        }
        Ok(Self { cmd, attributes })
    }
}

impl NetlinkSerializable for DcbMessage {
    fn message_type(&self) -> u16 {
        RTM_GETDCB
    }

    fn buffer_len(&self) -> usize {
        4 + self.attributes.as_slice().buffer_len()
    }

    fn serialize(&self, buf: &mut [u8]) {
        // dcb_family AF_UNSPEC, the command, dcb_pad.
        buf[..4].copy_from_slice(&[0, self.cmd, 0, 0]);
        self.attributes.as_slice().emit(&mut buf[4..]);
    }
}

impl NetlinkDeserializable for DcbMessage {
    type Error = DecodeError;

    fn deserialize(header: &NetlinkHeader, payload: &[u8]) -> Result<Self, DecodeError> {
        if !matches!(header.message_type, RTM_GETDCB | RTM_SETDCB) {
            return Err(format!("message type {}, not RTM_GETDCB", header.message_type).into());
        }
        Self::parse(payload)
    }
}

/// The request's bytes: one netlink message, `NLM_F_REQUEST` only (the kernel answers a
/// DCB get with one message, no dump, no ack).
pub fn request_bytes(cmd: u8, ifname: &str, seq: u32) -> Vec<u8> {
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST;
    header.sequence_number = seq;
    let mut msg = NetlinkMessage::new(
        header,
        NetlinkPayload::InnerMessage(DcbMessage::request(cmd, ifname)),
    );
    msg.finalize();
    let mut buf = vec![0; msg.buffer_len()];
    msg.serialize(&mut buf);
    buf
}

/// The netdev named in a request the kernel echoes in NLMSG_ERROR (the whole request comes
/// back unless the socket set NETLINK_CAP_ACK).
fn echoed_ifname(request: &[u8]) -> Option<String> {
    let msg = DcbMessage::parse(request.get(16..)?).ok()?;
    msg.attributes.into_iter().find_map(|a| match a {
        DcbAttribute::IfName(name) => Some(name),
        _ => None,
    })
}

/// Fold one reply message into the configuration: the IEEE_GET reply carries all of it,
/// a GDCBX reply only `DCB_ATTR_DCBX`.
fn merge(config: &mut DcbConfig, msg: DcbMessage) {
    for attr in msg.attributes {
        match attr {
            DcbAttribute::Dcbx(v) => config.dcbx = Some(v),
            DcbAttribute::Ieee(attrs) => {
                for a in attrs {
                    match a {
                        IeeeAttribute::Ets(e) => config.ets = Some(e),
                        IeeeAttribute::Pfc(p) => config.pfc = Some(p),
                        IeeeAttribute::AppTable(a) => config.app = a,
                        IeeeAttribute::PeerPfc(p) => config.peer_pfc = Some(p),
                        IeeeAttribute::PeerApp(a) => config.peer_app = a,
                        IeeeAttribute::Maxrate(m) => config.maxrate = Some(m),
                        IeeeAttribute::Buffer(b) => config.buffer = Some(b),
                        IeeeAttribute::AppTrust(t) => config.trust = Some(t),
                        // DcbConfig has no place for the peer's ETS; QCN and the rewrite
                        // table are not judged.
                        IeeeAttribute::PeerEts(_) | IeeeAttribute::Other(_) => {}
                    }
                }
            }
            DcbAttribute::IfName(_) | DcbAttribute::Other(_) => {}
        }
    }
}

/// Decode what `recv` gave (or a capture of it): one or more netlink messages. Any
/// truncated or malformed message, attribute or structure is an error for the whole
/// buffer: a partial configuration would read as "PFC off" where it was only cut.
pub fn decode(buf: &[u8]) -> Result<DcbReply, DecodeError> {
    let mut config = DcbConfig::default();
    let mut replies = 0;
    let mut at = 0;
    while at < buf.len() {
        let rest = buf.get(at..).unwrap_or_default();
        let msg = NetlinkMessage::<DcbMessage>::deserialize(rest)
            .map_err(|e| DecodeError::from(format!("message at byte {at}: {e}")))?;
        match msg.payload {
            // An ack (code 0) says nothing; an errno is the answer.
            NetlinkPayload::Error(e) => {
                if let Some(code) = e.code {
                    return Ok(DcbReply::Errno {
                        errno: code.get().saturating_abs(),
                        ifname: echoed_ifname(&e.header),
                    });
                }
            }
            NetlinkPayload::Done(_) => break,
            NetlinkPayload::InnerMessage(m) => {
                replies += 1;
                merge(&mut config, m);
            }
            NetlinkPayload::Overrun(_) => {
                return Err(format!("NLMSG_OVERRUN at byte {at}: the reply lost data").into())
            }
            _ => {} // NLMSG_NOOP
        }
        at += (msg.header.length as usize).div_ceil(4) * 4;
    }
    if replies == 0 {
        return Err(format!("{} bytes without an RTM_GETDCB reply", buf.len()).into());
    }
    Ok(DcbReply::Config(config))
}

/// What the kernel's errno means for the netdev's DCB, in the words a user reads.
pub fn errno_probe(netdev: &str, errno: i32) -> Probe<DcbConfig> {
    match errno {
        EOPNOTSUPP => Probe::NotExposed(format!(
            "{netdev}'s driver has no DCB operations (RTM_GETDCB: EOPNOTSUPP; a virtual NIC, a \
             driver without DCB, or a kernel without CONFIG_DCB): not manageable from this host"
        )),
        ENODEV => Probe::NotExposed(format!(
            "{netdev}: no such network interface in this network namespace (the kernel \
             answered RTM_GETDCB with ENODEV); its DCB configuration cannot be read here"
        )),
        _ => Probe::Failed(format!(
            "RTM_GETDCB DCB_CMD_IEEE_GET on {netdev}: {}",
            crate::model::errno::errno_text(errno)
        )),
    }
}

/// One request and the bytes of its reply.
fn query(cmd: u8, ifname: &str) -> Result<Vec<u8>, String> {
    let fail = |what: &str, e: std::io::Error| format!("rtnetlink socket: {what}: {e}");
    let socket = super::kernel_socket(netlink_sys::protocols::NETLINK_ROUTE, "rtnetlink")?;
    socket
        .send(&request_bytes(cmd, ifname, 1), 0)
        .map_err(|e| fail("send", e))?;
    let (bytes, _) = socket.recv_from_full().map_err(|e| fail("recv", e))?;
    Ok(bytes)
}

/// The netdev's DCB configuration, from this network namespace's kernel.
pub fn read(ifname: &str) -> Probe<DcbConfig> {
    // The kernel takes at most IFNAMSIZ - 1 bytes; a longer name is no netdev.
    if ifname.is_empty() || ifname.len() > 15 || ifname.contains('\0') {
        return errno_probe(ifname, ENODEV);
    }
    let mut config = match query(DCB_CMD_IEEE_GET, ifname).map(|b| decode(&b)) {
        Err(e) => return Probe::Failed(format!("RTM_GETDCB on {ifname}: {e}")),
        Ok(Err(e)) => {
            return Probe::Failed(format!(
                "RTM_GETDCB DCB_CMD_IEEE_GET on {ifname}: malformed reply: {e}"
            ))
        }
        Ok(Ok(DcbReply::Errno { errno, .. })) => return errno_probe(ifname, errno),
        Ok(Ok(DcbReply::Config(c))) => c,
    };
    // IEEE_GET carries DCBX whenever the driver has getdcbx; GDCBX is asked only in case.
    if config.dcbx.is_none() {
        if let Ok(Ok(DcbReply::Config(c))) = query(DCB_CMD_GDCBX, ifname).map(|b| decode(&b)) {
            config.dcbx = c.dcbx;
        }
    }
    Probe::Read(config)
}

/// A captured reply to `DCB_CMD_IEEE_GET` (the bytes the kernel wrote), as a captured tree
/// holds it; None when the file is not there.
pub fn read_capture(path: &Path) -> Option<Probe<DcbConfig>> {
    let bytes = match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(Probe::Failed(format!("{}: {e}", path.display()))),
        Ok(b) => b,
    };
    Some(match decode(&bytes) {
        Ok(DcbReply::Config(c)) => Probe::Read(c),
        Ok(DcbReply::Errno { errno, ifname }) => {
            let netdev = ifname.unwrap_or_else(|| format!("the netdev of {}", path.display()));
            errno_probe(&netdev, errno)
        }
        Err(e) => Probe::Failed(format!(
            "{}: not a reply to RTM_GETDCB DCB_CMD_IEEE_GET: {e}",
            path.display()
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::qos::{APP_SEL_DSCP, APP_SEL_ETHERTYPE};

    /// The fixtures tests/fixtures/dcb/make-dcb.py writes from the uapi structures.
    fn fixture(name: &str) -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/dcb")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn config(buf: &[u8]) -> DcbConfig {
        match decode(buf) {
            Ok(DcbReply::Config(c)) => c,
            other => panic!("not a configuration: {other:?}"),
        }
    }

    fn nla(kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut out = ((4 + payload.len()) as u16).to_ne_bytes().to_vec();
        out.extend_from_slice(&kind.to_ne_bytes());
        out.extend_from_slice(payload);
        out.resize(out.len().div_ceil(4) * 4, 0);
        out
    }

    /// A reply message around `attrs` (the attributes after `struct dcbmsg`).
    fn message(attrs: &[u8]) -> Vec<u8> {
        let mut out = ((20 + attrs.len()) as u32).to_ne_bytes().to_vec();
        out.extend_from_slice(&RTM_GETDCB.to_ne_bytes());
        out.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
        out.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&[0, DCB_CMD_IEEE_GET, 0, 0]);
        out.extend_from_slice(attrs);
        out
    }

    fn ieee(inner: &[u8]) -> Vec<u8> {
        message(&nla(DCB_ATTR_IEEE, inner))
    }

    #[test]
    fn every_fixture_decodes_to_the_values_make_dcb_packed() {
        for name in [
            "full",
            "pfc-wrong-priority",
            "dscp-unmapped",
            "pause-storm",
            "good",
            "pcp-untagged",
        ] {
            let decoded = serde_json::to_value(config(&fixture(&format!("{name}.nl")))).unwrap();
            let expect: serde_json::Value =
                serde_json::from_slice(&fixture(&format!("{name}.expect.json"))).unwrap();
            assert_eq!(decoded, expect, "{name}");
        }
    }

    /// The same facts written out here, so that a wrong expect.json cannot hide a decoder
    /// that agrees with it.
    #[test]
    fn full_holds_every_attribute() {
        let c = config(&fixture("full.nl"));
        assert_eq!(c.dcbx, Some(0x09));
        let ets = c.ets.unwrap();
        assert!(ets.willing);
        assert_eq!((ets.ets_cap, ets.cbs), (8, 1));
        assert_eq!(ets.tc_tx_bw, [10, 20, 30, 40, 0, 0, 0, 0]);
        assert_eq!(ets.tc_rx_bw, [40, 30, 20, 10, 0, 0, 0, 0]);
        assert_eq!(ets.tc_tsa, [2, 2, 2, 2, 0, 0, 0, 0]);
        assert_eq!(ets.prio_tc, [1, 0, 2, 3, 4, 5, 6, 7]);
        assert_eq!(ets.tc_reco_bw, [25, 25, 25, 25, 0, 0, 0, 0]);
        assert_eq!(ets.reco_prio_tc, [0, 1, 2, 3, 0, 1, 2, 3]);
        let pfc = c.pfc.unwrap();
        assert_eq!(
            (pfc.pfc_cap, pfc.pfc_en, pfc.mbc, pfc.delay),
            (8, 0x08, 1, 4096)
        );
        assert_eq!(pfc.requests, [0, 0, 0, 1_234_567_890_123, 0, 0, 0, 5]);
        assert_eq!(pfc.indications, [7, 0, 0, 42, 0, 0, 0, 1 << 40]);
        let dscp = |d: u16, priority: u8| DcbApp {
            selector: APP_SEL_DSCP,
            priority,
            protocol: d,
        };
        let roce_v1 = DcbApp {
            selector: APP_SEL_ETHERTYPE,
            priority: 3,
            protocol: 0x8915,
        };
        assert_eq!(c.app, [dscp(26, 3), dscp(46, 5), dscp(48, 6), roce_v1]);
        assert_eq!(c.trust, Some(vec![APP_SEL_DSCP, APP_SEL_PCP]));
        let buffer = c.buffer.unwrap();
        assert_eq!(buffer.prio2buffer, [0, 0, 0, 1, 0, 0, 0, 2]);
        assert_eq!(buffer.buffer_size, [130944, 261888, 32768, 0, 0, 0, 0, 0]);
        assert_eq!(buffer.total_size, 1 << 20);
        assert_eq!(c.maxrate, Some([0, 1_000_000, 0, 0, 0, 0, 0, 25_000_000]));
        let peer = c.peer_pfc.unwrap();
        assert_eq!((peer.pfc_cap, peer.pfc_en, peer.delay), (4, 0x08, 128));
        assert_eq!(peer.requests, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(peer.indications, [8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(c.peer_app, [dscp(26, 3), roce_v1]);

        // The message itself: the netdev, the peer's ETS (which DcbConfig does not keep),
        // and QCN, its statistics and the rewrite table kept whole.
        let msg = NetlinkMessage::<DcbMessage>::deserialize(&fixture("full.nl")).unwrap();
        let NetlinkPayload::InnerMessage(msg) = msg.payload else {
            panic!("not a DCB message")
        };
        assert_eq!(msg.cmd, DCB_CMD_IEEE_GET);
        assert_eq!(msg.attributes[0], DcbAttribute::IfName("eth2".into()));
        let DcbAttribute::Ieee(attrs) = &msg.attributes[1] else {
            panic!("no DCB_ATTR_IEEE")
        };
        let peer_ets = attrs.iter().find_map(|a| match a {
            IeeeAttribute::PeerEts(e) => Some(e),
            _ => None,
        });
        assert_eq!(peer_ets.unwrap().tc_tx_bw, [50, 50, 0, 0, 0, 0, 0, 0]);
        let others: Vec<(u16, usize)> = attrs
            .iter()
            .filter_map(|a| match a {
                IeeeAttribute::Other(n) => Some((n.kind(), n.value_len())),
                _ => None,
            })
            .collect();
        assert_eq!(others, [(8, 360), (9, 96), (12 | NLA_F_NESTED, 0)]);
    }

    #[test]
    fn a_decoded_reply_emits_the_kernels_bytes_again() {
        let bytes = fixture("full.nl");
        let msg = NetlinkMessage::<DcbMessage>::deserialize(&bytes).unwrap();
        let mut out = vec![0; msg.buffer_len()];
        msg.serialize(&mut out);
        assert_eq!(out, bytes);
    }

    #[test]
    fn the_request_is_laid_out_as_dcb_sends_it() {
        let req = request_bytes(DCB_CMD_IEEE_GET, "lo", 7);
        let mut want = 28u32.to_ne_bytes().to_vec();
        want.extend_from_slice(&78u16.to_ne_bytes());
        want.extend_from_slice(&1u16.to_ne_bytes());
        want.extend_from_slice(&7u32.to_ne_bytes());
        want.extend_from_slice(&0u32.to_ne_bytes());
        want.extend_from_slice(&[0, 21, 0, 0]);
        want.extend_from_slice(&[7, 0, 1, 0, b'l', b'o', 0, 0]);
        assert_eq!(req, want);
        let gdcbx = request_bytes(DCB_CMD_GDCBX, "eth0", 1);
        assert_eq!(gdcbx[17], 22);
        assert_eq!(echoed_ifname(&gdcbx).as_deref(), Some("eth0"));
    }

    #[test]
    fn eopnotsupp_means_no_dcb_on_the_netdev() {
        assert_eq!(
            decode(&fixture("eopnotsupp.nl")).unwrap(),
            DcbReply::Errno {
                errno: 95,
                ifname: Some("eth0".into())
            }
        );
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dcb/eopnotsupp.nl");
        let Some(Probe::NotExposed(why)) = read_capture(&path) else {
            panic!("EOPNOTSUPP is not NotExposed")
        };
        assert!(
            why.starts_with("eth0's driver has no DCB operations"),
            "{why}"
        );
        assert!(why.ends_with("not manageable from this host"), "{why}");
    }

    /// The live path on this host: `lo` has no dcbnl_ops, and an absent netdev is ENODEV.
    #[test]
    fn the_kernel_answers_lo_with_eopnotsupp_and_a_missing_netdev_with_enodev() {
        let Probe::NotExposed(why) = read("lo") else {
            panic!("lo read as having DCB: {:?}", read("lo"))
        };
        assert!(
            why.starts_with("lo's driver has no DCB operations"),
            "{why}"
        );
        let Probe::NotExposed(why) = read("rdmactl-none0") else {
            panic!("a missing netdev was not NotExposed")
        };
        assert!(why.contains("ENODEV"), "{why}");
        assert!(matches!(
            read("a-name-too-long-for-ifnamsiz"),
            Probe::NotExposed(_)
        ));
    }

    #[test]
    fn errnos_say_what_they_mean() {
        assert!(
            matches!(errno_probe("eth0", 19), Probe::NotExposed(w) if w.contains("no such network interface"))
        );
        let Probe::Failed(why) = errno_probe("eth0", 1) else {
            panic!("EPERM is a failure")
        };
        assert!(
            why.starts_with("RTM_GETDCB DCB_CMD_IEEE_GET on eth0: EPERM"),
            "{why}"
        );
    }

    #[test]
    fn captures_absent_unreadable_or_undecodable() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_capture(&dir.path().join("none.nl")), None);
        let junk = dir.path().join("junk.nl");
        std::fs::write(&junk, b"not netlink at all").unwrap();
        let Some(Probe::Failed(why)) = read_capture(&junk) else {
            panic!("junk decoded")
        };
        assert!(why.starts_with(&junk.display().to_string()), "{why}");
        // A directory cannot be read as a file.
        let Some(Probe::Failed(why)) = read_capture(dir.path()) else {
            panic!("a directory read")
        };
        assert!(why.contains(&dir.path().display().to_string()), "{why}");
        let good = dir.path().join("good.nl");
        std::fs::write(&good, fixture("good.nl")).unwrap();
        assert!(
            matches!(read_capture(&good), Some(Probe::Read(c)) if c.dscp_priority(26) == Some(3))
        );
    }

    #[test]
    fn the_ieee_get_reply_and_a_gdcbx_reply_in_one_capture_merge() {
        let mut ieee_only = ieee(&nla(DCB_ATTR_IEEE_PFC, &[0u8; IEEE_PFC_LEN]));
        let mut gdcbx = message(&nla(DCB_ATTR_DCBX, &[0x0a]));
        gdcbx[17] = DCB_CMD_GDCBX;
        ieee_only.extend_from_slice(&gdcbx);
        let c = config(&ieee_only);
        assert_eq!((c.dcbx, c.pfc.map(|p| p.pfc_en)), (Some(0x0a), Some(0)));
    }

    #[test]
    fn nests_decode_with_or_without_nla_f_nested() {
        // The PCP selector's entries are DCB_ATTR_DCB_APP, the others DCB_ATTR_IEEE_APP.
        let apps = [
            nla(DCB_ATTR_IEEE_APP, &[APP_SEL_DSCP, 3, 26, 0]),
            nla(DCB_ATTR_DCB_APP, &[APP_SEL_PCP, 5, 5, 0]),
            nla(7, &[9, 9, 9, 9]), // an unknown entry type is stepped over
        ]
        .concat();
        let trust = [
            nla(DCB_ATTR_DCB_APP, &[APP_SEL_PCP]),
            nla(DCB_ATTR_IEEE_APP, &[5]),
        ]
        .concat();
        for flag in [0, NLA_F_NESTED] {
            let inner = [
                nla(DCB_ATTR_IEEE_APP_TABLE | flag, &apps),
                nla(DCB_ATTR_DCB_APP_TRUST_TABLE | flag, &trust),
                nla(DCB_ATTR_IEEE_PEER_APP | flag, &apps),
            ]
            .concat();
            let c = config(&message(&nla(DCB_ATTR_IEEE | flag, &inner)));
            let pcp = DcbApp {
                selector: APP_SEL_PCP,
                priority: 5,
                protocol: 5,
            };
            assert_eq!(c.app.len(), 2);
            assert_eq!((c.app[1], c.dscp_priority(26)), (pcp, Some(3)));
            assert_eq!(c.trust, Some(vec![APP_SEL_PCP, APP_SEL_DSCP]));
            assert_eq!(c.peer_app, c.app);
            assert_eq!((c.ets, c.pfc, c.dcbx), (None, None, None));
        }
        // An empty trust table is a table that trusts nothing, not an absent one.
        let c = config(&ieee(&nla(
            DCB_ATTR_DCB_APP_TRUST_TABLE | NLA_F_NESTED,
            &[],
        )));
        assert_eq!(c.trust, Some(vec![]));
    }

    #[test]
    fn a_longer_struct_is_read_by_its_known_prefix() {
        let mut ets = vec![0u8; IEEE_ETS_LEN + 5];
        ets[1] = 8;
        ets[3] = 100;
        let mut pfc = vec![0u8; IEEE_PFC_LEN + 8];
        pfc[1] = 0x08;
        let c = config(&ieee(
            &[nla(DCB_ATTR_IEEE_ETS, &ets), nla(DCB_ATTR_IEEE_PFC, &pfc)].concat(),
        ));
        assert_eq!(c.ets.map(|e| (e.ets_cap, e.tc_tx_bw[0])), Some((8, 100)));
        assert_eq!(c.pfc.map(|p| p.enabled_priorities()), Some(vec![3]));
    }

    #[test]
    fn a_short_struct_is_an_error_naming_its_attribute() {
        let cases: [(u16, usize, &str); 8] = [
            (DCB_ATTR_IEEE_ETS, IEEE_ETS_LEN, "DCB_ATTR_IEEE_ETS"),
            (DCB_ATTR_IEEE_PFC, IEEE_PFC_LEN, "DCB_ATTR_IEEE_PFC"),
            (
                DCB_ATTR_IEEE_PEER_ETS,
                IEEE_ETS_LEN,
                "DCB_ATTR_IEEE_PEER_ETS",
            ),
            (
                DCB_ATTR_IEEE_PEER_PFC,
                IEEE_PFC_LEN,
                "DCB_ATTR_IEEE_PEER_PFC",
            ),
            (
                DCB_ATTR_IEEE_MAXRATE,
                IEEE_MAXRATE_LEN,
                "DCB_ATTR_IEEE_MAXRATE",
            ),
            (DCB_ATTR_DCB_BUFFER, DCBNL_BUFFER_LEN, "DCB_ATTR_DCB_BUFFER"),
            (DCB_ATTR_IEEE_APP_TABLE, 0, "DCB_ATTR_IEEE_APP_TABLE"),
            (
                DCB_ATTR_DCB_APP_TRUST_TABLE,
                0,
                "DCB_ATTR_DCB_APP_TRUST_TABLE",
            ),
        ];
        for (kind, len, name) in cases {
            let value = match kind {
                DCB_ATTR_IEEE_APP_TABLE => nla(DCB_ATTR_IEEE_APP, &[5, 3, 26]),
                DCB_ATTR_DCB_APP_TRUST_TABLE => nla(DCB_ATTR_IEEE_APP, &[]),
                _ => vec![0; len - 1],
            };
            let err = decode(&ieee(&nla(kind, &value))).unwrap_err().to_string();
            assert!(err.contains(name), "{name}: {err}");
        }
        let err = decode(&message(&nla(DCB_ATTR_DCBX, &[])))
            .unwrap_err()
            .to_string();
        assert!(err.contains("DCB_ATTR_DCBX"), "{err}");
    }

    #[test]
    fn malformed_attribute_lengths_are_errors() {
        let good = ieee(&nla(DCB_ATTR_IEEE_PFC, &[0u8; IEEE_PFC_LEN]));
        assert!(decode(&good).is_ok());
        // nla_len below its own header, at the top level and inside the nest.
        for (at, len) in [(20usize, 2u16), (20, 0), (24, 3), (24, 1)] {
            let mut bad = good.clone();
            bad[at..at + 2].copy_from_slice(&len.to_ne_bytes());
            assert!(decode(&bad).is_err(), "nla_len {len} at {at}");
        }
        // nla_len past the end of the message and of the nest.
        for at in [20usize, 24] {
            let mut bad = good.clone();
            let len = u16::from_ne_bytes([bad[at], bad[at + 1]]);
            bad[at..at + 2].copy_from_slice(&(len + 4).to_ne_bytes());
            assert!(decode(&bad).is_err(), "nla_len past the end at {at}");
        }
        // nlmsg_len past the buffer, below the header, and a dcbmsg cut short.
        let mut bad = good.clone();
        bad[0..4].copy_from_slice(&(good.len() as u32 + 4).to_ne_bytes());
        assert!(decode(&bad).is_err());
        bad[0..4].copy_from_slice(&8u32.to_ne_bytes());
        assert!(decode(&bad).is_err());
        let mut short = message(&[]);
        short.truncate(18);
        short[0..4].copy_from_slice(&18u32.to_ne_bytes());
        assert!(decode(&short)
            .unwrap_err()
            .to_string()
            .contains("struct dcbmsg"));
        // Another message type is not a DCB reply; nothing at all is no reply.
        let mut other = good.clone();
        other[4..6].copy_from_slice(&16u16.to_ne_bytes());
        assert!(decode(&other).is_err());
        assert!(decode(&[]).is_err());
    }

    #[test]
    fn every_truncation_of_full_is_an_error() {
        let full = fixture("full.nl");
        for n in 0..full.len() {
            assert!(
                decode(&full[..n]).is_err(),
                "{n} of {} bytes decoded",
                full.len()
            );
        }
        assert!(decode(&full).is_ok());
    }

    /// A small xorshift generator: the property below needs many arbitrary buffers, and a
    /// fixed seed keeps a failure reproducible.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn no_mutation_of_a_reply_makes_the_decoder_panic() {
        let full = fixture("full.nl");
        // The offsets of every attribute header, where a random length does the most harm.
        let mut headers = vec![0usize, 20];
        let mut at = 24;
        while at + 4 <= full.len() {
            headers.push(at);
            let len = u16::from_ne_bytes([full[at], full[at + 1]]) as usize;
            let nested = matches!(at, 20 | 24) || full[at + 2] == 3 && full[at + 3] == 0;
            at += if nested || len < 4 {
                4
            } else {
                len.div_ceil(4) * 4
            };
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut decoded = 0;
        for round in 0..200_000u32 {
            let mut buf = full.clone();
            match round % 4 {
                0 => {
                    for _ in 0..1 + xorshift(&mut seed) % 8 {
                        let bit = (xorshift(&mut seed) as usize) % (buf.len() * 8);
                        buf[bit / 8] ^= 1 << (bit % 8);
                    }
                }
                1 => buf.truncate((xorshift(&mut seed) as usize) % buf.len()),
                2 => {
                    let at = headers[(xorshift(&mut seed) as usize) % headers.len()];
                    let len = xorshift(&mut seed) as u16 % 1200;
                    buf[at..at + 2].copy_from_slice(&len.to_ne_bytes());
                }
                _ => {
                    let len = (xorshift(&mut seed) % 1200) as usize;
                    buf = (0..len).map(|_| xorshift(&mut seed) as u8).collect();
                    if len >= 20 {
                        buf[..20].copy_from_slice(&full[..20]);
                        buf[..4].copy_from_slice(&(len as u32).to_ne_bytes());
                    }
                }
            }
            if let Ok(DcbReply::Config(c)) = decode(&buf) {
                decoded += 1;
                let _ = (c.has_dscp_entries(), c.pfc.map(|p| p.enabled_priorities()));
            }
        }
        // Bit flips in values leave most replies decodable: the property saw both paths.
        assert!(decoded > 1000, "{decoded}");
    }
}
