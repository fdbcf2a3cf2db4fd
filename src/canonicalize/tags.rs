//! Tag names the HTML5 tree-construction rules single out, and their categories.
//!
//! The simulation in `tree.rs` only needs to know a tag by name when a rule of the WHATWG
//! tree-construction algorithm names it; every other tag is `Tag::Other` plus a hash of its name
//! (so `</custom-el>` still finds `<custom-el>` on the stack of open elements).

macro_rules! tags {
    ($($variant:ident = $name:literal,)*) => {
        /// A tag name known to the tree-construction rules (lowercase, as the tokenizer emits it).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(super) enum Tag { $($variant,)* Other }

        /// Number of `Tag` values (for per-tag tables).
        pub(super) const TAG_COUNT: usize = Tag::Other as usize + 1;

        impl Tag {
            /// The tag for a lowercase tag name; `Other` for names no rule mentions.
            ///
            /// Names are packed into one integer (every known name fits in 16 bytes) and
            /// looked up in a hash table built at compile time: one or two probes, instead of
            /// a chain of slice comparisons or a deep tree of integer compares.
            #[inline]
            pub(super) fn from_name(name: &[u8]) -> Tag {
                if name.is_empty() || name.len() > 16 {
                    return Tag::Other;
                }
                Tag::from_key(pack_fast(name))
            }

            /// `from_name` of the name whose `pack` is `key` (a name of 1 to 16 bytes, so
            /// `key != 0` for any name without NUL bytes).
            #[inline]
            pub(super) fn from_key(key: u128) -> Tag {
                let mut i = slot(key);
                loop {
                    let k = TAG_KEYS[i];
                    if k == key {
                        return TAG_VALUES[i];
                    }
                    if k == 0 {
                        return Tag::Other;
                    }
                    i = (i + 1) % TAG_SLOTS;
                }
            }
        }

        /// Every known tag with its name.
        pub(super) const ALL_TAGS: &[(&[u8], Tag)] = &[$(($name, Tag::$variant),)*];
    };
}

tags! {
    A = b"a", Address = b"address", AnnotationXml = b"annotation-xml", Applet = b"applet",
    Area = b"area", Article = b"article", Aside = b"aside", B = b"b", Base = b"base",
    Basefont = b"basefont", Bgsound = b"bgsound", Big = b"big", Blockquote = b"blockquote",
    Body = b"body", Br = b"br", Button = b"button", Caption = b"caption", Center = b"center",
    Code = b"code", Col = b"col", Colgroup = b"colgroup", Dd = b"dd", Desc = b"desc",
    Details = b"details", Dialog = b"dialog", Dir = b"dir", Div = b"div", Dl = b"dl", Dt = b"dt",
    Em = b"em", Embed = b"embed", Fieldset = b"fieldset", Figcaption = b"figcaption",
    Figure = b"figure", Font = b"font", Footer = b"footer", ForeignObject = b"foreignobject",
    Form = b"form", Frame = b"frame", Frameset = b"frameset", H1 = b"h1", H2 = b"h2", H3 = b"h3",
    H4 = b"h4", H5 = b"h5", H6 = b"h6", Head = b"head", Header = b"header", Hgroup = b"hgroup",
    Hr = b"hr", Html = b"html", I = b"i", Iframe = b"iframe", Image = b"image", Img = b"img",
    Input = b"input", Keygen = b"keygen", Li = b"li", Link = b"link", Listing = b"listing",
    Main = b"main", Malignmark = b"malignmark", Marquee = b"marquee", Math = b"math",
    Menu = b"menu", Meta = b"meta", Mglyph = b"mglyph", Mi = b"mi", Mn = b"mn", Mo = b"mo",
    Ms = b"ms", Mtext = b"mtext", Nav = b"nav", Nobr = b"nobr", Noembed = b"noembed",
    Noframes = b"noframes", Noscript = b"noscript", Object = b"object", Ol = b"ol",
    Optgroup = b"optgroup", Option = b"option", P = b"p", Param = b"param",
    Plaintext = b"plaintext", Pre = b"pre", Rb = b"rb", Rp = b"rp", Rt = b"rt", Rtc = b"rtc",
    Ruby = b"ruby", S = b"s", Script = b"script", Search = b"search", Section = b"section",
    Select = b"select", Small = b"small", Source = b"source", Span = b"span", Strike = b"strike",
    Strong = b"strong", Style = b"style", Sub = b"sub", Summary = b"summary", Sup = b"sup",
    Svg = b"svg", Table = b"table", Tbody = b"tbody", Td = b"td", Template = b"template",
    Textarea = b"textarea", Tfoot = b"tfoot", Th = b"th", Thead = b"thead", Title = b"title",
    Tr = b"tr", Track = b"track", Tt = b"tt", U = b"u", Ul = b"ul", Var = b"var", Wbr = b"wbr",
    Xmp = b"xmp",
}

/// Packs up to 16 bytes into an integer, little-endian, zero-padded (tag names contain no NUL:
/// the tokenizer turns it into U+FFFD).
pub(super) const fn pack(s: &[u8]) -> u128 {
    let mut v = 0u128;
    let mut i = 0;
    while i < s.len() && i < 16 {
        v |= (s[i] as u128) << (8 * i);
        i += 1;
    }
    v
}

/// `pack(s)` for 1 to 16 bytes with a few overlapping loads instead of a loop over the bytes:
/// the parts overlap on the same bytes at the same places, so OR-ing them is exact.
#[inline(always)]
fn pack_fast(s: &[u8]) -> u128 {
    let n = s.len();
    debug_assert!((1..=16).contains(&n));
    let u64_at = |i: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&s[i..i + 8]);
        u64::from_le_bytes(a)
    };
    let u32_at = |i: usize| {
        let mut a = [0u8; 4];
        a.copy_from_slice(&s[i..i + 4]);
        u32::from_le_bytes(a) as u64
    };
    if n >= 8 {
        u128::from(u64_at(0)) | u128::from(u64_at(n - 8)) << (8 * (n - 8))
    } else if n >= 4 {
        u128::from(u32_at(0) | u32_at(n - 4) << (8 * (n - 4)))
    } else {
        let h = n / 2;
        u128::from(s[0]) | u128::from(s[h]) << (8 * h) | u128::from(s[n - 1]) << (8 * (n - 1))
    }
}

/// Slots of the name table: a power of two, at most 1/4 full, so probe chains stay short.
const TAG_SLOTS: usize = 512;

/// The home slot of a packed name.
const fn slot(key: u128) -> usize {
    let x = (key as u64) ^ ((key >> 64) as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - TAG_SLOTS.trailing_zeros())) as usize
}

/// Open addressing with linear probing; key 0 (the empty name, never looked up) marks a free
/// slot.
const TAG_TABLE: [(u128, Tag); TAG_SLOTS] = {
    let mut t = [(0u128, Tag::Other); TAG_SLOTS];
    assert!(ALL_TAGS.len() * 4 <= TAG_SLOTS);
    let mut j = 0;
    while j < ALL_TAGS.len() {
        let key = pack(ALL_TAGS[j].0);
        let mut i = slot(key);
        while t[i].0 != 0 {
            i = (i + 1) % TAG_SLOTS;
        }
        t[i] = (key, ALL_TAGS[j].1);
        j += 1;
    }
    t
};

/// The keys of `TAG_TABLE` alone (8 KiB, where the table of (key, tag) pairs padded to 32
/// bytes takes 16 KiB of the L1 cache), and its tags.
static TAG_KEYS: [u128; TAG_SLOTS] = {
    let mut k = [0u128; TAG_SLOTS];
    let mut i = 0;
    while i < TAG_SLOTS {
        k[i] = TAG_TABLE[i].0;
        i += 1;
    }
    k
};
static TAG_VALUES: [Tag; TAG_SLOTS] = {
    let mut v = [Tag::Other; TAG_SLOTS];
    let mut i = 0;
    while i < TAG_SLOTS {
        v[i] = TAG_TABLE[i].1;
        i += 1;
    }
    v
};

/// Slots of the short-name table: every known tag name of at most 8 bytes (116 of them) at its
/// own slot, so a lookup is one probe.
const SHORT_SLOTS: usize = 512;
/// A multiplier that sends every known name of at most 8 bytes to a different slot (found by
/// trying random odd multipliers; the table's construction asserts it).
const SHORT_MUL: u64 = 0xCE36_46E0_12A6_AE39;

/// The slot of a packed name of at most 8 bytes.
#[inline(always)]
const fn short_slot(key: u64) -> usize {
    (key.wrapping_mul(SHORT_MUL) >> (64 - SHORT_SLOTS.trailing_zeros())) as usize
}

/// The short-name table: keys (`pack` of the name as u64; 0 for a free slot) and tags.
const SHORT_TABLE: ([u64; SHORT_SLOTS], [Tag; SHORT_SLOTS]) = {
    let mut k = [0u64; SHORT_SLOTS];
    let mut v = [Tag::Other; SHORT_SLOTS];
    let mut j = 0;
    while j < ALL_TAGS.len() {
        let name = ALL_TAGS[j].0;
        if name.len() <= 8 {
            let key = pack(name) as u64;
            let i = short_slot(key);
            assert!(
                k[i] == 0,
                "two short tag names share a slot: change SHORT_MUL"
            );
            k[i] = key;
            v[i] = ALL_TAGS[j].1;
        }
        j += 1;
    }
    (k, v)
};
static SHORT_KEYS: [u64; SHORT_SLOTS] = SHORT_TABLE.0;
static SHORT_TAGS: [Tag; SHORT_SLOTS] = SHORT_TABLE.1;

impl Tag {
    /// `from_key(u128::from(key))` for a key of at most 8 bytes (as `scan::short_name` gives
    /// it), by one probe of the short-name table: a known name of at most 8 bytes is at its
    /// slot, and any other key finds a different key (or the free slot's 0) there.
    #[inline(always)]
    pub(super) fn from_short_key(key: u64) -> Tag {
        let i = short_slot(key);
        if SHORT_KEYS[i] == key {
            SHORT_TAGS[i]
        } else {
            Tag::Other
        }
    }
}

/// Namespace of an element on the stack of open elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ns {
    Html,
    Svg,
    MathMl,
}

use Tag::*;

impl Tag {
    /// The "special" category of the spec (HTML namespace part).
    pub(super) fn is_special_html(self) -> bool {
        matches!(
            self,
            Address
                | Applet
                | Area
                | Article
                | Aside
                | Base
                | Basefont
                | Bgsound
                | Blockquote
                | Body
                | Br
                | Button
                | Caption
                | Center
                | Col
                | Colgroup
                | Dd
                | Details
                | Dir
                | Div
                | Dl
                | Dt
                | Embed
                | Fieldset
                | Figcaption
                | Figure
                | Footer
                | Form
                | Frame
                | Frameset
                | H1
                | H2
                | H3
                | H4
                | H5
                | H6
                | Head
                | Header
                | Hgroup
                | Hr
                | Html
                | Iframe
                | Img
                | Input
                | Keygen
                | Li
                | Link
                | Listing
                | Main
                | Marquee
                | Menu
                | Meta
                | Nav
                | Noembed
                | Noframes
                | Noscript
                | Object
                | Ol
                | P
                | Param
                | Plaintext
                | Pre
                | Script
                | Search
                | Section
                | Select
                | Source
                | Style
                | Summary
                | Table
                | Tbody
                | Td
                | Template
                | Textarea
                | Tfoot
                | Th
                | Thead
                | Title
                | Tr
                | Track
                | Ul
                | Wbr
                | Xmp
        )
    }

    /// Elements that "generate implied end tags" closes.
    pub(super) fn is_implied_end(self) -> bool {
        matches!(
            self,
            Dd | Dt | Li | Optgroup | Option | P | Rb | Rp | Rt | Rtc
        )
    }

    /// Elements that "generate all implied end tags thoroughly" closes.
    pub(super) fn is_implied_end_thorough(self) -> bool {
        self.is_implied_end()
            || matches!(
                self,
                Caption | Colgroup | Tbody | Td | Tfoot | Th | Thead | Tr
            )
    }

    pub(super) fn is_heading(self) -> bool {
        matches!(self, H1 | H2 | H3 | H4 | H5 | H6)
    }

    /// Start tags that break out of foreign (SVG/MathML) content back to HTML rules.
    pub(super) fn breaks_out_of_foreign(self) -> bool {
        matches!(
            self,
            B | Big
                | Blockquote
                | Body
                | Br
                | Center
                | Code
                | Dd
                | Div
                | Dl
                | Dt
                | Em
                | Embed
                | H1
                | H2
                | H3
                | H4
                | H5
                | H6
                | Head
                | Hr
                | I
                | Img
                | Li
                | Listing
                | Menu
                | Meta
                | Nobr
                | Ol
                | P
                | Pre
                | Ruby
                | S
                | Small
                | Span
                | Strong
                | Strike
                | Sub
                | Sup
                | Table
                | Tt
                | U
                | Ul
                | Var
        )
    }

    /// Elements whose content the canonical text drops (in any namespace, as the reference's
    /// CSS selector `script`/`style`/`template` matches by local name).
    pub(super) fn drops_content(self) -> bool {
        matches!(self, Script | Style | Template)
    }
}

/// Is `(tag, ns)` "special" (HTML list above plus the MathML and SVG ones)?
pub(super) fn is_special(tag: Tag, ns: Ns) -> bool {
    match ns {
        Ns::Html => tag.is_special_html(),
        Ns::MathMl => matches!(tag, Mi | Mo | Mn | Ms | Mtext | AnnotationXml),
        Ns::Svg => matches!(tag, ForeignObject | Desc | Title),
    }
}

/// Boundary elements of "has an element in scope" (the default scope). `select` is one in
/// lexbor (the reference), as in the customizable-select parser: `<div><select>a</div>b` keeps
/// "ab" together because the `</div>` is ignored.
pub(super) fn is_scope_boundary(tag: Tag, ns: Ns) -> bool {
    match ns {
        Ns::Html => {
            matches!(
                tag,
                Applet | Caption | Html | Table | Td | Th | Marquee | Object | Template | Select
            )
        }
        Ns::MathMl => matches!(tag, Mi | Mo | Mn | Ms | Mtext | AnnotationXml),
        Ns::Svg => matches!(tag, ForeignObject | Desc | Title),
    }
}

/// The scopes of "has an element in ... scope".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scope {
    Default,
    ListItem,
    Button,
    Table,
}

impl Scope {
    /// True if an element `(tag, ns)` stops the scope search.
    pub(super) fn stops_at(self, tag: Tag, ns: Ns) -> bool {
        match self {
            Scope::Default => is_scope_boundary(tag, ns),
            Scope::ListItem => {
                is_scope_boundary(tag, ns) || (ns == Ns::Html && matches!(tag, Ol | Ul))
            }
            Scope::Button => is_scope_boundary(tag, ns) || (ns == Ns::Html && tag == Button),
            Scope::Table => ns == Ns::Html && matches!(tag, Html | Table | Template),
        }
    }
}

/// A cheap 64-bit FNV-1a hash of a tag name, to match unknown tags by name.
pub(super) fn name_hash(name: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_fast_equals_pack() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for n in 1..=16 {
            for _ in 0..2000 {
                let s: Vec<u8> = (0..n)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        // Mostly letters, sometimes any byte.
                        if x.is_multiple_of(4) {
                            (x >> 8) as u8
                        } else {
                            b'a' + (x >> 8) as u8 % 26
                        }
                    })
                    .collect();
                assert_eq!(pack_fast(&s), pack(&s), "{s:?}");
            }
        }
        for &(name, _) in ALL_TAGS {
            assert_eq!(pack_fast(name), pack(name));
        }
    }

    /// The short-name table's one probe against the full table: every known name of at most
    /// 8 bytes, its neighbours (one byte changed, cut, extended) and random keys.
    #[test]
    fn from_short_key_equals_from_key() {
        let mut short = 0;
        for &(name, tag) in ALL_TAGS.iter().filter(|(n, _)| n.len() <= 8) {
            short += 1;
            let key = pack(name) as u64;
            assert_eq!(Tag::from_short_key(key), tag);
            for i in 0..8 {
                for flip in [1u64, 0x20, 0x80] {
                    let k = key ^ (flip << (8 * i));
                    assert_eq!(
                        Tag::from_short_key(k),
                        Tag::from_key(u128::from(k)),
                        "{k:x}"
                    );
                }
                let cut = key & ((1u64 << (8 * i)) - 1);
                assert_eq!(Tag::from_short_key(cut), Tag::from_key(u128::from(cut)));
            }
        }
        assert_eq!(short, 116);
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Letters and digits with bit 5 set, as `scan::short_name` builds keys.
            let k = (x | 0x2020_2020_2020_2020) >> (8 * (x % 8));
            assert_eq!(
                Tag::from_short_key(k),
                Tag::from_key(u128::from(k)),
                "{k:x}"
            );
        }
    }

    #[test]
    fn every_known_name_is_found_and_nothing_else() {
        for &(name, tag) in ALL_TAGS {
            assert_eq!(
                Tag::from_name(name),
                tag,
                "{}",
                String::from_utf8_lossy(name)
            );
            // Prefixes, extensions and uppercase forms of a known name are other tags.
            let mut longer = name.to_vec();
            longer.push(b'x');
            if !ALL_TAGS.iter().any(|&(n, _)| n == longer.as_slice()) {
                assert_eq!(Tag::from_name(&longer), Tag::Other);
            }
            let short = &name[..name.len() - 1];
            if !ALL_TAGS.iter().any(|&(n, _)| n == short) {
                assert_eq!(Tag::from_name(short), Tag::Other);
            }
            assert_eq!(Tag::from_name(&name.to_ascii_uppercase()), Tag::Other);
        }
        for other in [
            &b"custom-el"[..],
            b"",
            b"annotation-xml-and-more",
            b"\xEF\xBF\xBD",
        ] {
            assert_eq!(Tag::from_name(other), Tag::Other);
        }
    }
}
