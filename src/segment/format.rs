//! The fixed-size structures of a segment file (header, footer, directory entry, block-index
//! entry) and their byte layouts.
//!
//! format-spec/segment.md is the normative description. Every field offset below is a named
//! constant derived from the previous field's offset and size, so the code reads like the spec's
//! "N bytes: field" lists; the golden-bytes test in `tests.rs` keeps code and spec in step.

use byteorder::{ByteOrder, LittleEndian as LE};

/// Format version written by this build. It reads every version from `MIN_FORMAT_VERSION` up
/// to this one (format-spec/segment.md, version history).
pub const FORMAT_VERSION: u32 = 3;
/// Oldest format version this build reads.
pub const MIN_FORMAT_VERSION: u32 = 1;

/// First 8 bytes of every segment. The high-bit first byte and the trailing `\n` catch 7-bit and
/// line-ending-mangling transfers, as in PNG.
pub const HEADER_MAGIC: [u8; 8] = *b"\x89NDDSEG\n";
/// Last 8 bytes of every segment (a distinct value, so a truncated file never ends in it by
/// accident of ending in a header).
pub const FOOTER_MAGIC: [u8; 8] = *b"NDDSEGFT";

// ---- header: 16 bytes at offset 0 ----
const H_MAGIC: usize = 0;
const H_VERSION: usize = H_MAGIC + 8;
const H_RESERVED: usize = H_VERSION + 4;
/// Size of the file header.
pub const HEADER_LEN: usize = H_RESERVED + 4;

// ---- footer: 48 bytes at the end of the file ----
const F_DIR_OFFSET: usize = 0;
const F_DIR_LEN: usize = F_DIR_OFFSET + 8;
const F_FILE_LEN: usize = F_DIR_LEN + 8;
const F_DIR_CRC: usize = F_FILE_LEN + 8;
const F_TABLE_COUNT: usize = F_DIR_CRC + 4;
/// Offset of the format version inside the footer (read before the footer crc is checked, so a
/// future version with another footer layout is reported as such).
pub const F_VERSION: usize = F_TABLE_COUNT + 4;
/// Offset of the footer crc inside the footer; it covers footer bytes `0..F_FOOTER_CRC`.
pub const F_FOOTER_CRC: usize = F_VERSION + 4;
/// Offset of the footer magic inside the footer.
pub const F_MAGIC: usize = F_FOOTER_CRC + 4;
/// Size of the file footer.
pub const FOOTER_LEN: usize = F_MAGIC + 8;

// ---- directory entry: 72 bytes per table ----
const D_TABLE_ID: usize = 0;
const D_BLOCK_COUNT: usize = D_TABLE_ID + 4;
const D_ENTRY_COUNT: usize = D_BLOCK_COUNT + 4;
const D_MIN_KEY: usize = D_ENTRY_COUNT + 8;
const D_MAX_KEY: usize = D_MIN_KEY + 8;
const D_DATA_OFFSET: usize = D_MAX_KEY + 8;
const D_DATA_LEN: usize = D_DATA_OFFSET + 8;
const D_INDEX_OFFSET: usize = D_DATA_LEN + 8;
const D_VALUE_BYTES: usize = D_INDEX_OFFSET + 8;
const D_INDEX_CRC: usize = D_VALUE_BYTES + 8;
const D_RESERVED: usize = D_INDEX_CRC + 4;
/// Size of one directory entry.
pub const DIR_ENTRY_LEN: usize = D_RESERVED + 4;

// ---- block-index entry: 32 bytes per block ----
const B_FIRST_KEY: usize = 0;
const B_LAST_KEY: usize = B_FIRST_KEY + 8;
const B_OFFSET: usize = B_LAST_KEY + 8;
const B_LEN: usize = B_OFFSET + 8;
const B_CRC: usize = B_LEN + 4;
/// Size of one block-index entry.
pub const INDEX_ENTRY_LEN: usize = B_CRC + 4;

/// The file header (its only variable field is the version).
pub fn encode_header(version: u32) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    b[H_MAGIC..H_VERSION].copy_from_slice(&HEADER_MAGIC);
    LE::write_u32(&mut b[H_VERSION..H_RESERVED], version);
    // H_RESERVED stays zero.
    b
}

/// Header fields: (magic, version, reserved).
pub fn decode_header(b: &[u8; HEADER_LEN]) -> ([u8; 8], u32, u32) {
    let mut magic = [0u8; 8];
    magic.copy_from_slice(&b[H_MAGIC..H_VERSION]);
    (
        magic,
        LE::read_u32(&b[H_VERSION..H_RESERVED]),
        LE::read_u32(&b[H_RESERVED..HEADER_LEN]),
    )
}

/// The footer: where the directory is and how long the file must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    pub dir_offset: u64,
    pub dir_len: u64,
    pub file_len: u64,
    pub dir_crc: u32,
    pub table_count: u32,
    pub version: u32,
}

impl Footer {
    /// Encodes the footer, computing the footer crc.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut b = [0u8; FOOTER_LEN];
        LE::write_u64(&mut b[F_DIR_OFFSET..F_DIR_LEN], self.dir_offset);
        LE::write_u64(&mut b[F_DIR_LEN..F_FILE_LEN], self.dir_len);
        LE::write_u64(&mut b[F_FILE_LEN..F_DIR_CRC], self.file_len);
        LE::write_u32(&mut b[F_DIR_CRC..F_TABLE_COUNT], self.dir_crc);
        LE::write_u32(&mut b[F_TABLE_COUNT..F_VERSION], self.table_count);
        LE::write_u32(&mut b[F_VERSION..F_FOOTER_CRC], self.version);
        let crc = crc32fast::hash(&b[..F_FOOTER_CRC]);
        LE::write_u32(&mut b[F_FOOTER_CRC..F_MAGIC], crc);
        b[F_MAGIC..FOOTER_LEN].copy_from_slice(&FOOTER_MAGIC);
        b
    }

    /// Decodes the fields; magic, version and crc are checked by the reader.
    pub fn decode(b: &[u8; FOOTER_LEN]) -> Self {
        Footer {
            dir_offset: LE::read_u64(&b[F_DIR_OFFSET..F_DIR_LEN]),
            dir_len: LE::read_u64(&b[F_DIR_LEN..F_FILE_LEN]),
            file_len: LE::read_u64(&b[F_FILE_LEN..F_DIR_CRC]),
            dir_crc: LE::read_u32(&b[F_DIR_CRC..F_TABLE_COUNT]),
            table_count: LE::read_u32(&b[F_TABLE_COUNT..F_VERSION]),
            version: LE::read_u32(&b[F_VERSION..F_FOOTER_CRC]),
        }
    }

    /// (stored, computed) footer crc of an encoded footer.
    pub fn crcs(b: &[u8; FOOTER_LEN]) -> (u32, u32) {
        (
            LE::read_u32(&b[F_FOOTER_CRC..F_MAGIC]),
            crc32fast::hash(&b[..F_FOOTER_CRC]),
        )
    }
}

/// One table's directory entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub table_id: u32,
    pub block_count: u32,
    pub entry_count: u64,
    pub min_key: u64,
    pub max_key: u64,
    pub data_offset: u64,
    pub data_len: u64,
    pub index_offset: u64,
    pub value_bytes: u64,
    pub index_crc: u32,
    pub reserved: u32,
}

impl DirEntry {
    pub fn encode(&self) -> [u8; DIR_ENTRY_LEN] {
        let mut b = [0u8; DIR_ENTRY_LEN];
        LE::write_u32(&mut b[D_TABLE_ID..D_BLOCK_COUNT], self.table_id);
        LE::write_u32(&mut b[D_BLOCK_COUNT..D_ENTRY_COUNT], self.block_count);
        LE::write_u64(&mut b[D_ENTRY_COUNT..D_MIN_KEY], self.entry_count);
        LE::write_u64(&mut b[D_MIN_KEY..D_MAX_KEY], self.min_key);
        LE::write_u64(&mut b[D_MAX_KEY..D_DATA_OFFSET], self.max_key);
        LE::write_u64(&mut b[D_DATA_OFFSET..D_DATA_LEN], self.data_offset);
        LE::write_u64(&mut b[D_DATA_LEN..D_INDEX_OFFSET], self.data_len);
        LE::write_u64(&mut b[D_INDEX_OFFSET..D_VALUE_BYTES], self.index_offset);
        LE::write_u64(&mut b[D_VALUE_BYTES..D_INDEX_CRC], self.value_bytes);
        LE::write_u32(&mut b[D_INDEX_CRC..D_RESERVED], self.index_crc);
        LE::write_u32(&mut b[D_RESERVED..DIR_ENTRY_LEN], self.reserved);
        b
    }

    pub fn decode(b: &[u8; DIR_ENTRY_LEN]) -> Self {
        DirEntry {
            table_id: LE::read_u32(&b[D_TABLE_ID..D_BLOCK_COUNT]),
            block_count: LE::read_u32(&b[D_BLOCK_COUNT..D_ENTRY_COUNT]),
            entry_count: LE::read_u64(&b[D_ENTRY_COUNT..D_MIN_KEY]),
            min_key: LE::read_u64(&b[D_MIN_KEY..D_MAX_KEY]),
            max_key: LE::read_u64(&b[D_MAX_KEY..D_DATA_OFFSET]),
            data_offset: LE::read_u64(&b[D_DATA_OFFSET..D_DATA_LEN]),
            data_len: LE::read_u64(&b[D_DATA_LEN..D_INDEX_OFFSET]),
            index_offset: LE::read_u64(&b[D_INDEX_OFFSET..D_VALUE_BYTES]),
            value_bytes: LE::read_u64(&b[D_VALUE_BYTES..D_INDEX_CRC]),
            index_crc: LE::read_u32(&b[D_INDEX_CRC..D_RESERVED]),
            reserved: LE::read_u32(&b[D_RESERVED..DIR_ENTRY_LEN]),
        }
    }

    /// Size in bytes of this table's block index.
    pub fn index_len(&self) -> u64 {
        self.block_count as u64 * INDEX_ENTRY_LEN as u64
    }
}

/// One block-index entry: where a block is, its key range and its crc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRef {
    pub first_key: u64,
    pub last_key: u64,
    pub offset: u64,
    pub len: u32,
    pub crc: u32,
}

impl BlockRef {
    pub fn encode(&self) -> [u8; INDEX_ENTRY_LEN] {
        let mut b = [0u8; INDEX_ENTRY_LEN];
        LE::write_u64(&mut b[B_FIRST_KEY..B_LAST_KEY], self.first_key);
        LE::write_u64(&mut b[B_LAST_KEY..B_OFFSET], self.last_key);
        LE::write_u64(&mut b[B_OFFSET..B_LEN], self.offset);
        LE::write_u32(&mut b[B_LEN..B_CRC], self.len);
        LE::write_u32(&mut b[B_CRC..INDEX_ENTRY_LEN], self.crc);
        b
    }

    pub fn decode(b: &[u8; INDEX_ENTRY_LEN]) -> Self {
        BlockRef {
            first_key: LE::read_u64(&b[B_FIRST_KEY..B_LAST_KEY]),
            last_key: LE::read_u64(&b[B_LAST_KEY..B_OFFSET]),
            offset: LE::read_u64(&b[B_OFFSET..B_LEN]),
            len: LE::read_u32(&b[B_LEN..B_CRC]),
            crc: LE::read_u32(&b[B_CRC..INDEX_ENTRY_LEN]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_spec() {
        // format-spec/segment.md, "Sizes".
        assert_eq!(HEADER_LEN, 16);
        assert_eq!(FOOTER_LEN, 48);
        assert_eq!(DIR_ENTRY_LEN, 72);
        assert_eq!(INDEX_ENTRY_LEN, 32);
        assert_eq!((F_VERSION, F_FOOTER_CRC, F_MAGIC), (32, 36, 40));
    }

    #[test]
    fn structures_round_trip() {
        let f = Footer {
            dir_offset: 1,
            dir_len: 72,
            file_len: 9,
            dir_crc: 7,
            table_count: 1,
            version: 1,
        };
        let b = f.encode();
        assert_eq!(Footer::decode(&b), f);
        let (stored, computed) = Footer::crcs(&b);
        assert_eq!(stored, computed);
        let d = DirEntry {
            table_id: 3,
            block_count: 4,
            entry_count: 5,
            min_key: 6,
            max_key: u64::MAX,
            data_offset: 16,
            data_len: 100,
            index_offset: 116,
            value_bytes: 40,
            index_crc: 0xdead_beef,
            reserved: 0,
        };
        assert_eq!(DirEntry::decode(&d.encode()), d);
        let r = BlockRef {
            first_key: 1,
            last_key: 2,
            offset: 3,
            len: 4,
            crc: 5,
        };
        assert_eq!(BlockRef::decode(&r.encode()), r);
        assert_eq!(&encode_header(2)[..8], b"\x89NDDSEG\n");
    }
}
