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
