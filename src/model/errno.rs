//! Names for the numbers the kernel and the verbs libraries return: errnos, work-completion
//! statuses and IB CM reject reasons. The one table for the whole crate; a leaf.

/// The symbolic errno name (EINVAL, ETIMEDOUT, ...), which is what people search for;
/// "errno" for one not listed. The one table for the whole crate (verbs and CM too).
pub fn errno_name(errno: i32) -> &'static str {
    match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENODEV => "ENODEV",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ENOSPC => "ENOSPC",
        libc::EPIPE => "EPIPE",
        libc::ENOSYS => "ENOSYS",
        libc::ENODATA => "ENODATA",
        libc::EPROTO => "EPROTO",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EAFNOSUPPORT => "EAFNOSUPPORT",
        libc::EADDRINUSE => "EADDRINUSE",
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::ENETDOWN => "ENETDOWN",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::ECONNABORTED => "ECONNABORTED",
        libc::ECONNRESET => "ECONNRESET",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        _ => "errno",
    }
}

/// strerror text without std's " (os error N)" suffix.
pub fn strerror(errno: i32) -> String {
    let text = std::io::Error::from_raw_os_error(errno).to_string();
    match text.find(" (os error") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}

/// `EACCES (13, Permission denied)`: the name people grep for, the number, and the text.
pub fn errno_text(errno: i32) -> String {
    format!("{} ({errno}, {})", errno_name(errno), strerror(errno))
}

/// The `IBV_WC_*` name of a completion status.
pub fn wc_status_name(status: u32) -> &'static str {
    const NAMES: [&str; 24] = [
        "IBV_WC_SUCCESS",
        "IBV_WC_LOC_LEN_ERR",
        "IBV_WC_LOC_QP_OP_ERR",
        "IBV_WC_LOC_EEC_OP_ERR",
        "IBV_WC_LOC_PROT_ERR",
        "IBV_WC_WR_FLUSH_ERR",
        "IBV_WC_MW_BIND_ERR",
        "IBV_WC_BAD_RESP_ERR",
        "IBV_WC_LOC_ACCESS_ERR",
        "IBV_WC_REM_INV_REQ_ERR",
        "IBV_WC_REM_ACCESS_ERR",
        "IBV_WC_REM_OP_ERR",
        "IBV_WC_RETRY_EXC_ERR",
        "IBV_WC_RNR_RETRY_EXC_ERR",
        "IBV_WC_LOC_RDD_VIOL_ERR",
        "IBV_WC_REM_INV_RD_REQ_ERR",
        "IBV_WC_REM_ABORT_ERR",
        "IBV_WC_INV_EECN_ERR",
        "IBV_WC_INV_EEC_STATE_ERR",
        "IBV_WC_FATAL_ERR",
        "IBV_WC_RESP_TIMEOUT_ERR",
        "IBV_WC_GENERAL_ERR",
        "IBV_WC_TM_ERR",
        "IBV_WC_TM_RNDV_INCOMPLETE",
    ];
    NAMES
        .get(status as usize)
        .copied()
        .unwrap_or("IBV_WC_UNKNOWN")
}

/// The text `ibv_wc_status_str` prints, so users can grep for what they saw elsewhere.
pub fn wc_status_text(status: u32) -> &'static str {
    const TEXTS: [&str; 24] = [
        "success",
        "local length error",
        "local QP operation error",
        "local EE context operation error",
        "local protection error",
        "Work Request Flushed Error",
        "memory management operation error",
        "bad response error",
        "local access error",
        "remote invalid request error",
        "remote access error",
        "remote operation error",
        "transport retry counter exceeded",
        "RNR retry counter exceeded",
        "local RDD violation error",
        "remote invalid RD request",
        "aborted error",
        "invalid EE context number",
        "invalid EE context state",
        "fatal error",
        "response timeout error",
        "general error",
        "TM error",
        "TM software rendezvous",
    ];
    TEXTS.get(status as usize).copied().unwrap_or("unknown")
}

pub const WC_LOC_LEN_ERR: u32 = 1;
pub const WC_LOC_QP_OP_ERR: u32 = 2;
pub const WC_LOC_PROT_ERR: u32 = 4;
pub const WC_WR_FLUSH_ERR: u32 = 5;
pub const WC_REM_INV_REQ_ERR: u32 = 9;
pub const WC_REM_ACCESS_ERR: u32 = 10;
pub const WC_REM_OP_ERR: u32 = 11;
pub const WC_RETRY_EXC_ERR: u32 = 12;
pub const WC_RNR_RETRY_EXC_ERR: u32 = 13;

/// IB CM reject reasons (IBTA CM REJ, `enum ib_cm_rej_reason`), the status of
/// RDMA_CM_EVENT_REJECTED on InfiniBand and RoCE.
pub fn reject_reason_name(status: i32) -> &'static str {
    match status {
        1 => "IB_CM_REJ_NO_QP",
        2 => "IB_CM_REJ_NO_EEC",
        3 => "IB_CM_REJ_NO_RESOURCES",
        4 => "IB_CM_REJ_TIMEOUT",
        5 => "IB_CM_REJ_UNSUPPORTED",
        6 => "IB_CM_REJ_INVALID_COMM_ID",
        7 => "IB_CM_REJ_INVALID_COMM_INSTANCE",
        8 => "IB_CM_REJ_INVALID_SERVICE_ID",
        9 => "IB_CM_REJ_INVALID_TRANSPORT_TYPE",
        10 => "IB_CM_REJ_STALE_CONN",
        11 => "IB_CM_REJ_RDC_NOT_EXIST",
        12 => "IB_CM_REJ_INVALID_GID",
        13 => "IB_CM_REJ_INVALID_LID",
        14 => "IB_CM_REJ_INVALID_SL",
        15 => "IB_CM_REJ_INVALID_TRAFFIC_CLASS",
        16 => "IB_CM_REJ_INVALID_HOP_LIMIT",
        17 => "IB_CM_REJ_INVALID_PACKET_RATE",
        24 => "IB_CM_REJ_PORT_CM_REDIRECT",
        25 => "IB_CM_REJ_PORT_REDIRECT",
        26 => "IB_CM_REJ_INVALID_MTU",
        27 => "IB_CM_REJ_INSUFFICIENT_RESP_RESOURCES",
        28 => "IB_CM_REJ_CONSUMER_DEFINED",
        29 => "IB_CM_REJ_INVALID_RNR_RETRY",
        30 => "IB_CM_REJ_DUPLICATE_LOCAL_COMM_ID",
        31 => "IB_CM_REJ_INVALID_CLASS_VERSION",
        32 => "IB_CM_REJ_INVALID_FLOW_LABEL",
        33 => "IB_CM_REJ_INVALID_ALT_FLOW_LABEL",
        35 => "IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED",
        -111 => "ECONNREFUSED (iWARP)",
        -110 => "ETIMEDOUT",
        _ => "unknown reject reason",
    }
}
