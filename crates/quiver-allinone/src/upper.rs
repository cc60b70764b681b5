//! `upper_case(s VARCHAR) -> VARCHAR`: Unicode upper case (full case mapping, so
//! `ß` becomes `SS`), NULL stays NULL.
//!
//! The common case is ASCII text: then the whole values buffer is uppercased
//! in one vectorised pass and the offsets and validity are shared with the
//! input, not rebuilt. Any non-ASCII byte in the batch switches to a per-row
//! path (ASCII rows still take the byte fast path there).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, StringArray};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::DataType;
use quiver_vgi::{Arg, Function, ScalarFunction};
use quiver_wire::{ErrorCode, ErrorReport};

/// The `upper_case` function.
pub fn upper_case() -> Function {
    ScalarFunction::new("upper_case", DataType::Utf8)
        .doc("Converts a string to upper case (Unicode full case mapping); NULL stays NULL.")
        .arg(Arg::new("s", DataType::Utf8).doc("The string to convert"))
        .body(|input| upper(input.columns[0].as_string::<i32>()))
        .comment("Upper-cases text with Unicode full case mapping")
        .tag("vgi.category", "text")
        .category("text")
        .example(
            "SELECT allinone.main.upper_case('straße')",
            "STRASSE: full case mapping turns ß into SS",
        )
}

/// Upper-cases every string of `input`.
pub fn upper(input: &StringArray) -> Result<ArrayRef, ErrorReport> {
    let offsets = input.value_offsets();
    let first = offsets[0] as usize;
    let last = offsets[offsets.len() - 1] as usize;
    let bytes = &input.value_data()[first..last];
    if bytes.is_ascii() {
        return Ok(Arc::new(upper_ascii(input, bytes, first)));
    }
    upper_unicode(input)
}

/// The ASCII path: same lengths, so the offsets (rebased if the input is a
/// slice) and the null buffer carry over.
fn upper_ascii(input: &StringArray, bytes: &[u8], first: usize) -> StringArray {
    let values: Buffer = bytes
        .iter()
        .map(u8::to_ascii_uppercase)
        .collect::<Vec<u8>>()
        .into();
    let offsets = if first == 0 {
        input.offsets().clone()
    } else {
        let rebased: ScalarBuffer<i32> = input
            .value_offsets()
            .iter()
            .map(|o| o - first as i32)
            .collect();
        // SAFETY: rebasing monotonic offsets by their first value keeps them
        // monotonic and starting at zero.
        unsafe { OffsetBuffer::new_unchecked(rebased) }
    };
    // SAFETY: offsets are the input's (valid for these lengths) and ASCII
    // upper-casing maps ASCII bytes to ASCII bytes, which is valid UTF-8.
    unsafe { StringArray::new_unchecked(offsets, values, input.nulls().cloned()) }
}

/// The general path, row by row.
fn upper_unicode(input: &StringArray) -> Result<ArrayRef, ErrorReport> {
    let mut values: Vec<u8> =
        Vec::with_capacity(input.value_data().len() + input.value_data().len() / 8);
    let mut offsets: Vec<i32> = Vec::with_capacity(input.len() + 1);
    offsets.push(0);
    let mut utf8 = [0u8; 4];
    for row in 0..input.len() {
        if input.is_valid(row) {
            let text = input.value(row);
            if text.is_ascii() {
                values.extend(text.bytes().map(|b| b.to_ascii_uppercase()));
            } else {
                for upper in text.chars().flat_map(char::to_uppercase) {
                    values.extend_from_slice(upper.encode_utf8(&mut utf8).as_bytes());
                }
            }
        }
        let end = i32::try_from(values.len()).map_err(|_| {
            ErrorReport::new(
                "ValueError",
                "upper_case: a batch's result exceeds 2 GiB of text; send smaller batches",
            )
            .with_code(ErrorCode::ResourceExhausted)
        })?;
        offsets.push(end);
    }
    // SAFETY: offsets were pushed in increasing order from 0 and end at
    // values.len(); values is a concatenation of whole UTF-8 encodings.
    let array = unsafe {
        StringArray::new_unchecked(
            OffsetBuffer::new_unchecked(offsets.into()),
            values.into(),
            input.nulls().cloned(),
        )
    };
    Ok(Arc::new(array))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(values: &[Option<&str>]) -> Vec<Option<String>> {
        let input = StringArray::from(values.to_vec());
        let output = upper(&input).unwrap();
        output
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(str::to_string))
            .collect()
    }

    #[test]
    fn ascii_batches_keep_nulls() {
        let got = run(&[Some("hello"), None, Some("wOrLd"), Some("")]);
        assert_eq!(
            got,
            [
                Some("HELLO".into()),
                None,
                Some("WORLD".into()),
                Some("".into())
            ]
        );
    }

    #[test]
    fn unicode_uses_full_case_mapping() {
        let got = run(&[
            Some("straße"),
            None,
            Some("ǆemal"),
            Some("abc"),
            Some("ﬁ ῳ"),
        ]);
        let expected: Vec<Option<String>> = ["straße", "", "ǆemal", "abc", "ﬁ ῳ"]
            .iter()
            .enumerate()
            .map(|(i, s)| (i != 1).then(|| s.to_uppercase()))
            .collect();
        assert_eq!(got, expected);
        assert_eq!(got[0].as_deref(), Some("STRASSE"));
    }

    #[test]
    fn sliced_inputs_are_rebased() {
        let input = StringArray::from(vec!["skip", "ab", "cd"]);
        let sliced = input.slice(1, 2);
        let output = upper(&sliced).unwrap();
        let got: Vec<&str> = output.as_string::<i32>().iter().flatten().collect();
        assert_eq!(got, ["AB", "CD"]);
        let unicode = StringArray::from(vec!["skip", "é", "ß"]).slice(1, 2);
        let output = upper(&unicode).unwrap();
        let got: Vec<&str> = output.as_string::<i32>().iter().flatten().collect();
        assert_eq!(got, ["É", "SS"]);
    }
}
