//! Quirks mode from the DOCTYPE (WHATWG HTML 13.2.6.4.1). It matters to the text in one
//! place only: in quirks mode `<table>` does not close an open `<p>`.

/// Public identifier prefixes that put a document in quirks mode (WHATWG HTML 13.2.6.4.1).
const QUIRKY_PUBLIC_PREFIXES: &[&str] = &[
    "+//silmaril//dtd html pro v0r11 19970101//",
    "-//as//dtd html 3.0 aswedit + extensions//",
    "-//advasoft ltd//dtd html 3.0 aswedit + extensions//",
    "-//ietf//dtd html 2.0 level 1//",
    "-//ietf//dtd html 2.0 level 2//",
    "-//ietf//dtd html 2.0 strict level 1//",
    "-//ietf//dtd html 2.0 strict level 2//",
    "-//ietf//dtd html 2.0 strict//",
    "-//ietf//dtd html 2.0//",
    "-//ietf//dtd html 2.1e//",
    "-//ietf//dtd html 3.0//",
    "-//ietf//dtd html 3.2 final//",
    "-//ietf//dtd html 3.2//",
    "-//ietf//dtd html 3//",
    "-//ietf//dtd html level 0//",
    "-//ietf//dtd html level 1//",
    "-//ietf//dtd html level 2//",
    "-//ietf//dtd html level 3//",
    "-//ietf//dtd html strict level 0//",
    "-//ietf//dtd html strict level 1//",
    "-//ietf//dtd html strict level 2//",
    "-//ietf//dtd html strict level 3//",
    "-//ietf//dtd html strict//",
    "-//ietf//dtd html//",
    "-//metrius//dtd metrius presentational//",
    "-//microsoft//dtd internet explorer 2.0 html strict//",
    "-//microsoft//dtd internet explorer 2.0 html//",
    "-//microsoft//dtd internet explorer 2.0 tables//",
    "-//microsoft//dtd internet explorer 3.0 html strict//",
    "-//microsoft//dtd internet explorer 3.0 html//",
    "-//microsoft//dtd internet explorer 3.0 tables//",
    "-//netscape comm. corp.//dtd html//",
    "-//netscape comm. corp.//dtd strict html//",
    "-//o'reilly and associates//dtd html 2.0//",
    "-//o'reilly and associates//dtd html extended 1.0//",
    "-//o'reilly and associates//dtd html extended relaxed 1.0//",
    "-//sq//dtd html 2.0 hotmetal + extensions//",
    "-//softquad software//dtd hotmetal pro 6.0::19990601::extensions to html 4.0//",
    "-//softquad//dtd hotmetal pro 4.0::19970916::extensions to html 4.0//",
    "-//spyglass//dtd html 2.0 extended//",
    "-//sun microsystems corp.//dtd hotjava html//",
    "-//sun microsystems corp.//dtd hotjava strict html//",
    "-//w3c//dtd html 3 1995-03-24//",
    "-//w3c//dtd html 3.2 draft//",
    "-//w3c//dtd html 3.2 final//",
    "-//w3c//dtd html 3.2//",
    "-//w3c//dtd html 3.2s draft//",
    "-//w3c//dtd html 4.0 frameset//",
    "-//w3c//dtd html 4.0 transitional//",
    "-//w3c//dtd html experimental 19960712//",
    "-//w3c//dtd html experimental 970421//",
    "-//w3c//dtd w3 html//",
    "-//w3o//dtd w3 html 3.0//",
    "-//webtechs//dtd mozilla html 2.0//",
    "-//webtechs//dtd mozilla html//",
];

fn starts_with_ci(s: &[u8], prefix: &str) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// Whether a DOCTYPE token puts the document in quirks mode.
pub(super) fn doctype_is_quirks(
    name: &[u8],
    public: Option<&[u8]>,
    system: Option<&[u8]>,
    force: bool,
) -> bool {
    if force || name != b"html" {
        return true;
    }
    if let Some(p) = public {
        let exact = [
            &b"-//w3o//dtd w3 html strict 3.0//en//"[..],
            b"-/w3c/dtd html 4.0 transitional/en",
            b"html",
        ];
        if exact.iter().any(|e| p.eq_ignore_ascii_case(e))
            || QUIRKY_PUBLIC_PREFIXES.iter().any(|q| starts_with_ci(p, q))
        {
            return true;
        }
        if system.is_none()
            && (starts_with_ci(p, "-//w3c//dtd html 4.01 frameset//")
                || starts_with_ci(p, "-//w3c//dtd html 4.01 transitional//"))
        {
            return true;
        }
    }
    system.is_some_and(|s| {
        s.eq_ignore_ascii_case(b"http://www.ibm.com/data/dtd/v11/ibmxhtml1-transitional.dtd")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quirks_from_doctype() {
        assert!(!doctype_is_quirks(b"html", None, None, false));
        assert!(doctype_is_quirks(b"html", None, None, true));
        assert!(doctype_is_quirks(b"svg", None, None, false));
        let t401 = b"-//W3C//DTD HTML 4.01 Transitional//EN";
        assert!(doctype_is_quirks(b"html", Some(t401), None, false));
        assert!(!doctype_is_quirks(
            b"html",
            Some(t401),
            Some(b"http://www.w3.org/TR/html4/loose.dtd"),
            false
        ));
        assert!(doctype_is_quirks(
            b"html",
            Some(b"-//W3C//DTD HTML 3.2 Final//EN"),
            None,
            false
        ));
    }
}
