//! JSON Lines input: one JSON object per line, read line by line.
//!
//! A line's key is its id field (a string, or a number printed as JSON prints it); a line
//! without one is keyed `<file>:<line>`. The content is the HTML field if present (HTML), else
//! the text field (plain text); a string url field (default `url`) is the document's URL. Blank lines are skipped. A line that is not a JSON object, has no
//! content field, or has a content field that is not a string is `Bad`, and reading continues.

use std::io::BufRead;

use serde_json::Value;

use super::{read_line_bounded, InputItem, InputOptions, RawDoc};
use crate::canonicalize::DocFormat;

pub(super) struct JsonlReader<R> {
    r: R,
    file: String,
    opts: InputOptions,
    line_no: u64,
    buf: Vec<u8>,
    done: bool,
}

impl<R: BufRead> JsonlReader<R> {
    pub(super) fn new(r: R, file: String, opts: InputOptions) -> Self {
        JsonlReader {
            r,
            file,
            opts,
            line_no: 0,
            buf: Vec::new(),
            done: false,
        }
    }

    fn parse_line(&self, origin: String) -> InputItem {
        let fallback_key = origin.clone();
        let v: Value = match serde_json::from_slice(&self.buf) {
            Ok(v) => v,
            Err(e) => return InputItem::bad(fallback_key, origin, format!("malformed JSON: {e}")),
        };
        let Value::Object(obj) = v else {
            return InputItem::bad(fallback_key, origin, "not a JSON object");
        };
        let key = match obj.get(&self.opts.jsonl_id_field) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            None | Some(Value::Null) => fallback_key,
            Some(_) => {
                let reason = format!(
                    "field \"{}\" is neither a string nor a number",
                    self.opts.jsonl_id_field
                );
                return InputItem::bad(fallback_key, origin, reason);
            }
        };
        let (field, format) = if obj.contains_key(&self.opts.jsonl_html_field) {
            (&self.opts.jsonl_html_field, DocFormat::Html)
        } else if obj.contains_key(&self.opts.jsonl_text_field) {
            (&self.opts.jsonl_text_field, DocFormat::Text)
        } else {
            let reason = format!(
                "no \"{}\" or \"{}\" field",
                self.opts.jsonl_html_field, self.opts.jsonl_text_field
            );
            return InputItem::bad(key, origin, reason);
        };
        let Some(Value::String(content)) = obj.get(field) else {
            return InputItem::bad(key, origin, format!("field \"{field}\" is not a string"));
        };
        if content.len() as u64 > self.opts.max_doc_bytes {
            let reason = format!(
                "document too large ({} bytes; the limit is {})",
                content.len(),
                self.opts.max_doc_bytes
            );
            return InputItem::bad(key, origin, reason);
        }
        let url = match obj.get(&self.opts.jsonl_url_field) {
            Some(Value::String(u)) if !u.is_empty() => Some(u.clone()),
            None | Some(Value::Null) | Some(Value::String(_)) => None,
            Some(_) => {
                let reason = format!("field \"{}\" is not a string", self.opts.jsonl_url_field);
                return InputItem::bad(key, origin, reason);
            }
        };
        // JSON text is Unicode: the bytes are UTF-8 whatever a <meta charset> inside says.
        let charset = Some("utf-8".to_string());
        InputItem::Doc(RawDoc {
            key,
            url,
            bytes: content.clone().into_bytes(),
            format,
            charset,
            origin,
        })
    }
}

impl<R: BufRead> Iterator for JsonlReader<R> {
    type Item = InputItem;

    fn next(&mut self) -> Option<InputItem> {
        // A line may hold a document of max_doc_bytes plus JSON escaping and other fields.
        let max_line = usize::try_from(
            self.opts
                .max_doc_bytes
                .saturating_mul(2)
                .saturating_add(1 << 20),
        )
        .unwrap_or(usize::MAX);
        while !self.done {
            let n = match read_line_bounded(&mut self.r, &mut self.buf, max_line) {
                Ok(n) => n,
                Err(e) => {
                    self.done = true;
                    let origin = format!("{}:{}", self.file, self.line_no + 1);
                    return Some(InputItem::bad(
                        origin.clone(),
                        origin,
                        format!("read error: {e}"),
                    ));
                }
            };
            if n == 0 {
                self.done = true;
                break;
            }
            self.line_no += 1;
            let origin = format!("{}:{}", self.file, self.line_no);
            if n > self.buf.len() {
                return Some(InputItem::bad(
                    origin.clone(),
                    origin,
                    format!("line too long ({n} bytes)"),
                ));
            }
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(self.parse_line(origin));
        }
        None
    }
}
