//! How figures appear in `-j`: rounded to a fixed precision, so a float prints as the
//! figure a reader would write. Pure; the model's `serialize_with` attributes name these.

/// A float figure rounded to `decimals` places, so `-j` says `1022.05`, not the binary
/// float's `1022.0500000000001`: the nearest double to the rounded value prints in its
/// shortest form.
pub fn round_to(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    let rounded = (value * scale).round() / scale;
    // Rounding cannot make a finite figure infinite; keep NaN/inf out of JSON anyway.
    if rounded.is_finite() {
        rounded
    } else {
        value
    }
}

/// `serialize_with` for microseconds and other figures: 3 decimals (nanoseconds).
pub fn ser_3dp<S: serde::Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(round_to(*value, 3))
}

/// `serialize_with` for seconds: 6 decimals (microseconds).
pub fn ser_6dp<S: serde::Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(round_to(*value, 6))
}

/// `serialize_with` for an optional figure: 3 decimals, null stays null.
pub fn ser_opt_3dp<S: serde::Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.serialize_f64(round_to(*v, 3)),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_print_rounded() {
        #[derive(serde::Serialize)]
        struct Figures {
            #[serde(serialize_with = "ser_3dp")]
            us: f64,
            #[serde(serialize_with = "ser_6dp")]
            seconds: f64,
            #[serde(serialize_with = "ser_opt_3dp")]
            none: Option<f64>,
        }
        let text = serde_json::to_string(&Figures {
            us: 1022.0500000000001,
            seconds: 0.123_456_789,
            none: None,
        })
        .unwrap();
        assert_eq!(text, r#"{"us":1022.05,"seconds":0.123457,"none":null}"#);
        assert_eq!(round_to(2.0004, 3), 2.0);
        assert_eq!(round_to(f64::MAX, 3), f64::MAX);
    }
}
