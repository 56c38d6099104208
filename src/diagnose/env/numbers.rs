//! Numbers as the libraries read them: NCCL with `strtoll(s, NULL, 0)`, UCX with
//! `sscanf("%lu")`.

/// What C's `strtoll(s, NULL, 0)` makes of `s`: leading white space skipped, a sign, then
/// `0x` hex, `0` octal or decimal digits; whatever follows is ignored, and no digits at
/// all is 0. None when it overflows (ERANGE: NCCL then keeps its default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CNumber {
    pub value: i64,
    /// The text after the number (ignored by NCCL).
    pub rest: String,
    /// Whether any digit was read (`three` reads as 0 with no digit).
    pub digits: bool,
    /// 16 for `0x..`, 8 for a leading 0 followed by digits, else 10.
    pub base: u32,
}

pub fn c_strtoll(s: &str) -> Option<CNumber> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let hex_digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .filter(|r| r.starts_with(|c: char| c.is_ascii_hexdigit()));
    let (base, body) = match hex_digits {
        Some(r) => (16, r),
        None if t.starts_with('0') => (8, t),
        None => (10, t),
    };
    let len = body.find(|c: char| !c.is_digit(base)).unwrap_or(body.len());
    let digits = &body[..len];
    let mut value: i128 = 0;
    for c in digits.chars() {
        value = value * i128::from(base) + i128::from(c.to_digit(base)?);
        if value > i128::from(i64::MAX) + 1 {
            return None;
        }
    }
    let value = if negative { -value } else { value };
    let value = i64::try_from(value).ok()?;
    Some(CNumber {
        value,
        rest: body[len..].to_string(),
        digits: !digits.is_empty(),
        base: if base == 8 && len <= 1 { 10 } else { base },
    })
}

/// C's `atoi` for messages: white space, a sign, decimal digits; 0 without any.
pub(super) fn c_atoi(s: &str) -> i64 {
    let t = s.trim_start();
    let (sign, t) = match t.as_bytes().first() {
        Some(b'-') => (-1, &t[1..]),
        Some(b'+') => (1, &t[1..]),
        _ => (1, t),
    };
    let len = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    sign * t[..len].parse::<i64>().unwrap_or(0)
}

/// What UCX's `sscanf(s, "%lu")` makes of `s`: white space, a sign, decimal digits, the
/// rest ignored; a negative number wraps around. None when there is no digit (UCX then
/// refuses the value).
pub fn c_sscanf_lu(s: &str) -> Option<(u64, String)> {
    let t = s.trim_start();
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let len = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if len == 0 {
        return None;
    }
    // strtoul saturates at ULONG_MAX on overflow.
    let value = t[..len].parse::<u64>().unwrap_or(u64::MAX);
    let value = if negative {
        value.wrapping_neg()
    } else {
        value
    };
    Some((value, t[len..].to_string()))
}

/// How NCCL read a number, for the evidence: nothing when it is the plain decimal text.
pub(super) fn how_read(text: &str, n: &CNumber) -> Option<String> {
    let plain = text.trim() == n.value.to_string();
    if plain {
        return None;
    }
    Some(if !n.digits {
        format!("NCCL reads it with strtoll(s, NULL, 0): '{text}' has no digits, which is 0")
    } else if !n.rest.trim().is_empty() {
        format!(
            "NCCL reads it with strtoll(s, NULL, 0): the number is {} and '{}' after it is ignored",
            n.value,
            n.rest.trim()
        )
    } else if n.base == 8 {
        format!(
            "NCCL reads it with strtoll(s, NULL, 0): a leading 0 is octal, so '{}' is {}",
            text.trim(),
            n.value
        )
    } else {
        format!(
            "NCCL reads it with strtoll(s, NULL, 0): '{}' is {}",
            text.trim(),
            n.value
        )
    })
}

/// A text NCCL read as a number, but surely not as the person meant: no digits, text after
/// the number, or an octal leading 0.
pub(super) fn misread(n: &CNumber) -> bool {
    !n.digits || !n.rest.trim().is_empty() || n.base == 8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_strtoll_and_sscanf_read_them() {
        let n = |s: &str| c_strtoll(s).map(|n| (n.value, n.rest, n.digits, n.base));
        assert_eq!(n("3"), Some((3, String::new(), true, 10)));
        assert_eq!(n("0x1"), Some((1, String::new(), true, 16)));
        assert_eq!(n("0X1f"), Some((31, String::new(), true, 16)));
        assert_eq!(n("010"), Some((8, String::new(), true, 8)));
        assert_eq!(n("08"), Some((0, "8".into(), true, 10)));
        assert_eq!(n("0"), Some((0, String::new(), true, 10)));
        assert_eq!(n("  -1"), Some((-1, String::new(), true, 10)));
        assert_eq!(n("3abc"), Some((3, "abc".into(), true, 10)));
        assert_eq!(n("three"), Some((0, "three".into(), false, 10)));
        assert_eq!(n("0x"), Some((0, "x".into(), true, 10)));
        assert_eq!(n("99999999999999999999"), None);
        assert_eq!(c_atoi("x"), 0);
        assert_eq!(c_atoi("010"), 10);
        assert_eq!(c_sscanf_lu("3"), Some((3, String::new())));
        assert_eq!(c_sscanf_lu("0x1"), Some((0, "x1".into())));
        assert_eq!(c_sscanf_lu("-1"), Some((u64::MAX, String::new())));
        assert_eq!(c_sscanf_lu("auto3"), None);
    }
}
