//! Elias-Fano coding of a non-decreasing sequence of `n` u64 values in `[0, max]`
//! (format-spec/segment.md, "Elias-Fano sequence"), the building block of format version 2:
//! the keys and value ends of a data block, and FORWARD lists.
//!
//! Each value `x` is split into `l` low bits, stored packed at fixed width, and a high part
//! `x >> l`, stored in unary: value i sets bit `(x_i >> l) + i` of the high bit vector. With
//! `l = floor(log2(max / n))` that is at most `l + 2` bits per value, within 2 bits of the
//! information-theoretic minimum for a sorted set, and still gives random access: value i is at
//! the position of the i-th one bit. Blocks add *samples* (the position of every 64th one, and
//! of every 64th zero) so that `get(i)` and `lower_bound(x)` scan at most a few words instead
//! of the whole vector.
//!
//! Everything here is panic-free on arbitrary bytes: a view is built from the byte lengths the
//! parameters imply, and accessors return `None` rather than read past the end.

/// One sample per this many ones (and zeros).
pub const SAMPLE: usize = 64;

/// Number of low bits for `n` values up to `max`: `floor(log2(max / n))`, 0 when `max < n`.
pub fn low_bits(n: usize, max: u64) -> u32 {
    let n = n as u64;
    if n == 0 || max < n {
        return 0;
    }
    // Without a division (the writer sizes every block this way at every added entry): with
    // d = bits(max) - bits(n), 2^(d-1) <= max / n < 2^(d+1), and n << d (no overflow: it has
    // bits(max) bits) tells which side of 2^d the quotient is on.
    let d = n.leading_zeros() - max.leading_zeros();
    if n << d <= max {
        d
    } else {
        d - 1
    }
}

/// Byte sizes of the regions of an Elias-Fano sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub n: usize,
    pub l: u32,
    /// `max >> l`: the number of zeros in the high bit vector.
    pub high_max: u64,
    pub low_bytes: usize,
    pub high_bits: usize,
    pub high_bytes: usize,
    /// u32 positions of ones 0, 64, 128, ... (when sampled).
    pub ones_samples: usize,
    /// u32 positions of zeros 0, 64, 128, ... (when sampled).
    pub zero_samples: usize,
}

impl Layout {
    /// The layout for `n` values up to `max`; `None` if it would not fit in memory (only for
    /// corrupt parameters).
    pub fn new(n: usize, max: u64, ones: bool, zeros: bool) -> Option<Layout> {
        let l = low_bits(n, max);
        let high_max = if n == 0 { 0 } else { max >> l };
        let low_bytes = n.checked_mul(l as usize)?.div_ceil(8);
        let high_bits = if n == 0 {
            0
        } else {
            n.checked_add(usize::try_from(high_max).ok()?)?
        };
        let ones_samples = if ones { n.div_ceil(SAMPLE) } else { 0 };
        let zero_samples = if zeros {
            usize::try_from(high_max).ok()?.div_ceil(SAMPLE)
        } else {
            0
        };
        Some(Layout {
            n,
            l,
            high_max,
            low_bytes,
            high_bits,
            high_bytes: high_bits.div_ceil(8),
            ones_samples,
            zero_samples,
        })
    }

    /// Total encoded size in bytes.
    pub fn bytes(&self) -> Option<usize> {
        self.low_bytes.checked_add(self.high_bytes)?.checked_add(
            self.ones_samples
                .checked_add(self.zero_samples)?
                .checked_mul(4)?,
        )
    }
}

/// Appends the Elias-Fano encoding of `values` (non-decreasing, all `<= max`, exactly `n`
/// of them) to `out`, with the samples `ones` / `zeros` asks for.
///
/// One pass over the values: the output is sized from the [`Layout`] first, then each value
/// writes its low bits, its one in the high bit vector and the samples due at it in place.
pub fn encode(
    values: impl Iterator<Item = u64>,
    n: usize,
    max: u64,
    ones: bool,
    zeros: bool,
    out: &mut Vec<u8>,
) {
    let lay = Layout::new(n, max, ones, zeros).expect("Elias-Fano layout of an in-memory list");
    let total = lay.bytes().expect("Elias-Fano layout of an in-memory list");
    let start = out.len();
    out.resize(start + total, 0);
    let (low, rest) = out[start..].split_at_mut(lay.low_bytes);
    let (high, rest) = rest.split_at_mut(lay.high_bytes);
    let (one_samples, zero_samples) = rest.split_at_mut(lay.ones_samples * 4);
    let l = lay.l;
    let mask = if l >= 64 { u64::MAX } else { (1u64 << l) - 1 };
    // Low bits, packed LSB first: 64 at a time from `acc` (which holds `nbits` < 64 between
    // values, so one value fills at most one more word).
    let mut acc: u128 = 0;
    let mut nbits: u32 = 0;
    let mut low_at = 0usize;
    for (i, v) in values.enumerate() {
        if l > 0 {
            acc |= ((v & mask) as u128) << nbits;
            nbits += l;
            if nbits >= 64 {
                low[low_at..low_at + 8].copy_from_slice(&(acc as u64).to_le_bytes());
                low_at += 8;
                acc >>= 64;
                nbits -= 64;
            }
        }
        let h = v >> l;
        let p = h as usize + i;
        high[p / 8] |= 1 << (p % 8);
        if ones && i % SAMPLE == 0 {
            let s = i / SAMPLE * 4;
            one_samples[s..s + 4].copy_from_slice(&(p as u32).to_le_bytes());
        }
    }
    while nbits > 0 {
        low[low_at] = acc as u8;
        low_at += 1;
        acc >>= 8;
        nbits = nbits.saturating_sub(8);
    }
    debug_assert_eq!(low_at, lay.low_bytes);
    if zeros {
        sample_zeros(high, lay.high_bits, zero_samples);
    }
}

/// Writes the positions of zeros 0, SAMPLE, 2 SAMPLE, ... of the high bit vector (its first
/// `bits` bits) to `samples`, which has room for exactly those.
///
/// A pass over the finished vector's words rather than a test at each value: whether a value
/// passes zeros depends on the data, and a branch on it was mispredicted about as often as
/// not (a block's keys are random). Here the loop over a word's samples runs about every
/// other word (a word holds ~32 zeros; every 64th is sampled). `high.len()` is `bits` / 8
/// rounded up, so every chunk starts below `bits`.
fn sample_zeros(high: &[u8], bits: usize, samples: &mut [u8]) {
    let mut next = 0usize; // number of the next zero to sample
    let mut seen = 0usize; // zeros in the words before this one
    let mut zs = 0usize; // samples written
    for (wi, chunk) in high.chunks(8).enumerate() {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        let valid = (bits - wi * 64).min(64);
        let mask = if valid == 64 {
            u64::MAX
        } else {
            (1u64 << valid) - 1
        };
        let w = !u64::from_le_bytes(b) & mask;
        let c = w.count_ones() as usize;
        while next < seen + c {
            let pos = wi * 64 + select_in_word(w, (next - seen) as u32) as usize;
            samples[zs * 4..zs * 4 + 4].copy_from_slice(&(pos as u32).to_le_bytes());
            zs += 1;
            next += SAMPLE;
        }
        seen += c;
    }
    debug_assert_eq!(zs * 4, samples.len());
}

/// Position of the set bit number `r` (0-based) of `w`; `r < w.count_ones()`.
#[inline]
fn select_in_word(mut w: u64, mut r: u32) -> u32 {
    let mut base = 0;
    // Skip whole bytes first (at most 7), then clear the remaining lower set bits (at most 7).
    loop {
        let c = (w & 0xff).count_ones();
        if r < c || base >= 56 {
            break;
        }
        r -= c;
        w >>= 8;
        base += 8;
    }
    for _ in 0..r {
        w &= w.wrapping_sub(1);
    }
    base + w.trailing_zeros()
}

/// A borrowed Elias-Fano sequence.
#[derive(Clone, Copy, Debug)]
pub struct EfView<'a> {
    lay: Layout,
    low: &'a [u8],
    high: &'a [u8],
    ones: &'a [u8],
    zeros: &'a [u8],
}

/// Reads `width <= 64` bits at bit offset `bit` of `bytes` (zeros past the end).
#[inline]
pub fn read_bits(bytes: &[u8], bit: usize, width: u32) -> u64 {
    if width == 0 {
        return 0;
    }
    let (byte, shift) = (bit / 8, (bit % 8) as u32);
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    if shift + width <= 64 {
        if let Some(w) = bytes.get(byte..byte + 8) {
            let w = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
            return (w >> shift) & mask;
        }
    }
    let mut buf = [0u8; 16];
    let avail = bytes.get(byte..).unwrap_or(&[]);
    let k = avail.len().min(16);
    buf[..k].copy_from_slice(&avail[..k]);
    ((u128::from_le_bytes(buf) >> shift) as u64) & mask
}

impl<'a> EfView<'a> {
    /// Splits `bytes` into the sequence and the rest; `None` if `bytes` is too short.
    pub fn parse(
        bytes: &'a [u8],
        n: usize,
        max: u64,
        ones: bool,
        zeros: bool,
    ) -> Option<(EfView<'a>, &'a [u8])> {
        Self::with_layout(bytes, Layout::new(n, max, ones, zeros)?)
    }

    /// [`EfView::parse`] with the layout already computed (a reader that keeps the layouts of
    /// sequences it has parsed before).
    #[inline]
    pub fn with_layout(bytes: &'a [u8], lay: Layout) -> Option<(EfView<'a>, &'a [u8])> {
        if bytes.len() < lay.bytes()? {
            return None;
        }
        let (low, rest) = bytes.split_at(lay.low_bytes);
        let (high, rest) = rest.split_at(lay.high_bytes);
        let (o, rest) = rest.split_at(lay.ones_samples * 4);
        let (z, rest) = rest.split_at(lay.zero_samples * 4);
        Some((
            EfView {
                lay,
                low,
                high,
                ones: o,
                zeros: z,
            },
            rest,
        ))
    }

    pub fn len(&self) -> usize {
        self.lay.n
    }

    pub fn layout(&self) -> &Layout {
        &self.lay
    }

    #[inline]
    fn word(&self, w: usize) -> u64 {
        read_bits(self.high, w * 64, 64)
    }

    #[inline]
    fn low(&self, i: usize) -> u64 {
        read_bits(self.low, i * self.lay.l as usize, self.lay.l)
    }

    #[inline]
    fn sample(s: &[u8], j: usize) -> Option<usize> {
        let b = s.get(j * 4..j * 4 + 4)?;
        Some(u32::from_le_bytes(b.try_into().ok()?) as usize)
    }

    /// Bit position of one number `i` (0-based), scanning from the nearest sample.
    #[inline]
    fn select1(&self, i: usize) -> Option<usize> {
        if i >= self.lay.n {
            return None;
        }
        let (mut pos, mut r) = match Self::sample(self.ones, i / SAMPLE) {
            Some(p) => (p, i % SAMPLE),
            None => (0, i),
        };
        let words = self.lay.high_bits.div_ceil(64);
        let mut w = pos / 64;
        // Ones at or after `pos` in the first word.
        let mut bits = self.word(w) & (u64::MAX << (pos % 64));
        loop {
            let c = bits.count_ones() as usize;
            if r < c {
                pos = w * 64 + select_in_word(bits, r as u32) as usize;
                return (pos < self.lay.high_bits).then_some(pos);
            }
            r -= c;
            w += 1;
            if w >= words {
                return None;
            }
            bits = self.word(w);
        }
    }

    /// Bit position of zero number `j` (0-based).
    #[inline]
    fn select0(&self, j: usize) -> Option<usize> {
        if j as u64 >= self.lay.high_max {
            return None;
        }
        let (pos, mut r) = match Self::sample(self.zeros, j / SAMPLE) {
            Some(p) => (p, j % SAMPLE),
            None => (0, j),
        };
        let words = self.lay.high_bits.div_ceil(64);
        let mut w = pos / 64;
        let mut bits = !self.word(w) & (u64::MAX << (pos % 64));
        loop {
            if w + 1 == words && !self.lay.high_bits.is_multiple_of(64) {
                bits &= (1u64 << (self.lay.high_bits % 64)) - 1;
            }
            let c = bits.count_ones() as usize;
            if r < c {
                return Some(w * 64 + select_in_word(bits, r as u32) as usize);
            }
            r -= c;
            w += 1;
            if w >= words {
                return None;
            }
            bits = !self.word(w);
        }
    }

    /// Value `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<u64> {
        let p = self.select1(i)?;
        Some((((p - i) as u64) << self.lay.l) | self.low(i))
    }

    /// Values `i - 1` and `i` (`i >= 1`) with one select: value `i` is at the next one bit.
    #[inline]
    pub fn get_pair(&self, i: usize) -> Option<(u64, u64)> {
        if i == 0 || i >= self.lay.n {
            return None;
        }
        let p = self.select1(i - 1)?;
        // Next one bit after p.
        let mut w = (p + 1) / 64;
        let words = self.lay.high_bits.div_ceil(64);
        let shift = (p + 1) % 64;
        let mut bits = if shift == 0 {
            self.word(w)
        } else {
            self.word(w) & (u64::MAX << shift)
        };
        while bits == 0 {
            w += 1;
            if w >= words {
                return None;
            }
            bits = self.word(w);
        }
        let q = w * 64 + bits.trailing_zeros() as usize;
        let a = (((p - (i - 1)) as u64) << self.lay.l) | self.low(i - 1);
        let b = (((q - i) as u64) << self.lay.l) | self.low(i);
        Some((a, b))
    }

    /// Appends `base + value` for every value to `out`: the sequential decode, in one loop.
    pub fn decode_into(&self, base: u64, out: &mut Vec<u64>) {
        out.reserve(self.lay.n);
        self.decode_each(base, |_, v| out.push(v));
    }

    /// Writes `base + value` for every value into `out`, which must hold exactly
    /// [`EfView::len`] values (false, nothing written, otherwise): the sequential decode in
    /// place.
    pub fn decode_to_slice(&self, base: u64, out: &mut [u64]) -> bool {
        if out.len() != self.lay.n {
            return false;
        }
        self.decode_each(base, |i, v| out[i] = v);
        true
    }

    /// Calls `emit(i, base + value i)` for every value in order.
    #[inline(always)]
    fn decode_each(&self, base: u64, mut emit: impl FnMut(usize, u64)) {
        let (n, l) = (self.lay.n, self.lay.l);
        let words = self.lay.high_bits.div_ceil(64);
        let (mut i, mut w) = (0usize, 0usize);
        // Fast path: 8 readable bytes and shift + l <= 64 (l <= 56).
        let fast_until = if l <= 56 {
            (self.low.len().saturating_sub(8) * 8) / (l.max(1) as usize)
        } else {
            0
        };
        let mask = if l == 0 { 0 } else { u64::MAX >> (64 - l) };
        while w < words && i < n {
            let mut bits = self.word(w);
            while bits != 0 && i < n {
                let pos = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let high = ((pos - i) as u64) << l;
                let low = if l == 0 {
                    0
                } else if i < fast_until {
                    let bit = i * l as usize;
                    let b = bit / 8;
                    let word = u64::from_le_bytes(self.low[b..b + 8].try_into().unwrap_or([0; 8]));
                    (word >> (bit % 8)) & mask
                } else {
                    self.low(i)
                };
                emit(i, base.wrapping_add(high | low));
                i += 1;
            }
            w += 1;
        }
    }

    /// Asks the CPU for the cache lines [`EfView::lower_bound`] of `x` reads first (a hint
    /// only; no effect on results): the zero sample before `x`'s bucket, and where the bucket
    /// and its low bits lie if the values are spread evenly (feature hashes are).
    #[inline]
    pub fn prefetch_lower_bound(&self, x: u64) {
        let (n, l) = (self.lay.n, self.lay.l);
        let h = if l == 64 { 0 } else { x >> l };
        if n == 0 || h > self.lay.high_max {
            return;
        }
        if h > 0 {
            if let Some(b) = self.zeros.get((h as usize - 1) / SAMPLE * 4) {
                super::prefetch(b);
            }
        }
        let rank = (h as u128 * n as u128 / (self.lay.high_max as u128 + 1)) as usize;
        if let Some(b) = self.high.get((h as usize).saturating_add(rank) / 8) {
            super::prefetch(b);
        }
        if let Some(b) = self.low.get(rank.saturating_mul(l as usize) / 8) {
            super::prefetch(b);
        }
    }

    /// Asks the CPU for the cache lines [`EfView::get_pair`] of `i` reads (a hint only; no
    /// effect on results): the one sample before value `i`, where its high bits lie if the
    /// values are spread evenly, and its low bits (exact).
    #[inline]
    pub fn prefetch_get(&self, i: usize) {
        let n = self.lay.n;
        if i >= n {
            return;
        }
        if let Some(b) = self.ones.get(i / SAMPLE * 4) {
            super::prefetch(b);
        }
        let pos = i + (i as u128 * self.lay.high_max as u128 / n as u128) as usize;
        if let Some(b) = self.high.get(pos / 8) {
            super::prefetch(b);
        }
        let l = self.lay.l as usize;
        if let Some(b) = self.low.get(i.saturating_sub(1) * l / 8) {
            super::prefetch(b);
        }
    }

    /// Index of the first value `>= x` (`len()` if none), and whether it equals `x`.
    #[inline]
    pub fn lower_bound(&self, x: u64) -> (usize, bool) {
        let n = self.lay.n;
        if n == 0 {
            return (0, false);
        }
        let l = self.lay.l;
        let h = if l == 64 { 0 } else { x >> l };
        if h > self.lay.high_max {
            return (n, false);
        }
        let xl = x & if l == 0 {
            0
        } else if l == 64 {
            u64::MAX
        } else {
            (1u64 << l) - 1
        };
        // Bucket h starts after zero h-1; the ones before it are the values with high < h.
        let (mut pos, mut i) = if h == 0 {
            (0, 0)
        } else {
            match self.select0(h as usize - 1) {
                Some(p) => (p + 1, p + 1 - (h as usize - 1) - 1),
                None => return (n, false),
            }
        };
        // The bucket is the run of ones from `pos`; the zero after it ends bucket h, and the
        // next value has a larger high part.
        loop {
            let run = read_bits(self.high, pos, 64).trailing_ones() as usize;
            for _ in 0..run {
                if i >= n {
                    return (n, false);
                }
                let lo = self.low(i);
                if lo >= xl {
                    return (i, lo == xl);
                }
                i += 1;
            }
            if run < 64 || pos >= self.lay.high_bits {
                return (i.min(n), false);
            }
            pos += 64;
        }
    }

    /// The values in order (stops early only on a malformed vector).
    pub fn iter(&self) -> EfIter<'a> {
        EfIter {
            high: self.high,
            low: self.low,
            l: self.lay.l,
            n: self.lay.n,
            i: 0,
            w: 0,
            bits: read_bits(self.high, 0, 64),
            words: self.lay.high_bits.div_ceil(64),
        }
    }

    /// Full structural check: exactly `n` ones, no bit set past the vector, the last value is
    /// `max`, the samples are the positions they claim, and (if `strict`) no value repeats.
    /// `Err(byte offset within the sequence, reason)`.
    pub fn validate(&self, max: u64, strict: bool) -> Result<(), (usize, String)> {
        let lay = &self.lay;
        let high_at = lay.low_bytes;
        let ones: usize = self.high.iter().map(|b| b.count_ones() as usize).sum();
        if ones != lay.n {
            return Err((high_at, format!("{ones} one bits for {} values", lay.n)));
        }
        if !lay.high_bits.is_multiple_of(8) {
            if let Some(&last) = self.high.last() {
                if last >> (lay.high_bits % 8) != 0 {
                    return Err((high_at + lay.high_bytes - 1, "bits set past the end".into()));
                }
            }
        }
        if !lay.l.is_multiple_of(8) && lay.n > 0 {
            let used = (lay.n * lay.l as usize) % 8;
            if used != 0 {
                if let Some(&last) = self.low.last() {
                    if last >> used != 0 {
                        return Err((lay.low_bytes - 1, "low bits set past the end".into()));
                    }
                }
            }
        }
        // Word by word, visiting the one bits (values) and, among the zero bits, only those
        // with a sample (every SAMPLE-th zero: at most one a word), in bit order, so the
        // first problem found is the one a bit-by-bit walk would find.
        let (mut prev, mut one_i, mut zero_j) = (None::<u64>, 0usize, 0usize);
        let mut i = 0usize;
        let samples_at = high_at + lay.high_bytes;
        let words = lay.high_bits.div_ceil(64);
        // Low bits of value i read as one word while 8 bytes are there (as `decode_into`).
        let l = lay.l;
        let fast_until = if l <= 56 {
            (self.low.len().saturating_sub(8) * 8) / (l.max(1) as usize)
        } else {
            0
        };
        let mask = if l == 0 { 0 } else { u64::MAX >> (64 - l) };
        let low = |i: usize| {
            if l == 0 {
                0
            } else if i < fast_until {
                let bit = i * l as usize;
                let b = bit / 8;
                let w = u64::from_le_bytes(self.low[b..b + 8].try_into().unwrap_or([0; 8]));
                (w >> (bit % 8)) & mask
            } else {
                self.low(i)
            }
        };
        for w in 0..words {
            let base = w * 64;
            let valid = if base + 64 <= lay.high_bits {
                u64::MAX
            } else {
                (1u64 << (lay.high_bits - base)) - 1
            };
            let word = self.word(w) & valid;
            // The sampled zero in this word, if any: zero number `zero_j * SAMPLE`.
            let mut zero_at = None;
            if !self.zeros.is_empty() {
                let zeros_before = base - i;
                let free = !word & valid;
                let target = zero_j * SAMPLE;
                if target >= zeros_before && target - zeros_before < free.count_ones() as usize {
                    let k = (target - zeros_before) as u32;
                    zero_at = Some(base + select_in_word(free, k) as usize);
                }
            }
            // The ones below the sampled zero, the zero, then the ones above it.
            let below = match zero_at {
                Some(z) if z > base => word & (u64::MAX >> (64 - (z - base))),
                _ => 0,
            };
            let mut ones = |mut bits: u64| {
                while bits != 0 {
                    let pos = base + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    if !self.ones.is_empty() && i.is_multiple_of(SAMPLE) {
                        if Self::sample(self.ones, one_i) != Some(pos) {
                            return Err((samples_at + 4 * one_i, "bad one sample".to_string()));
                        }
                        one_i += 1;
                    }
                    let v = (((pos - i) as u64) << lay.l) | low(i);
                    if prev.is_some_and(|p| p > v || (strict && p == v)) {
                        return Err((high_at + pos / 8, format!("value {v} does not increase")));
                    }
                    prev = Some(v);
                    i += 1;
                }
                Ok(())
            };
            ones(below)?;
            if let Some(zpos) = zero_at {
                if Self::sample(self.zeros, zero_j) != Some(zpos) {
                    let at = samples_at + 4 * (lay.ones_samples + zero_j);
                    return Err((at, "bad zero sample".to_string()));
                }
                zero_j += 1;
            }
            ones(word & !below)?;
        }
        if lay.n > 0 && prev != Some(max) {
            return Err((high_at, format!("last value {prev:?} is not {max}")));
        }
        Ok(())
    }
}

/// Iterator over an `EfView`'s values.
#[derive(Clone)]
pub struct EfIter<'a> {
    high: &'a [u8],
    low: &'a [u8],
    l: u32,
    n: usize,
    i: usize,
    w: usize,
    bits: u64,
    words: usize,
}

impl Iterator for EfIter<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.i >= self.n {
            return None;
        }
        while self.bits == 0 {
            self.w += 1;
            if self.w >= self.words {
                self.i = self.n;
                return None;
            }
            self.bits = read_bits(self.high, self.w * 64, 64);
        }
        let pos = self.w * 64 + self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        let i = self.i;
        self.i += 1;
        let high = (pos - i) as u64;
        let low = read_bits(self.low, i * self.l as usize, self.l);
        Some((high << self.l) | low)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let r = self.n - self.i;
        (0, Some(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `low_bits` without the division is `floor(log2(max / n))` (0 when `max < n`).
    #[test]
    fn low_bits_equal_the_quotient_log() {
        let by_div = |n: usize, max: u64| -> u32 {
            if n == 0 {
                return 0;
            }
            let q = max / n as u64;
            if q == 0 {
                0
            } else {
                63 - q.leading_zeros()
            }
        };
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed
        };
        let mut cases: Vec<(usize, u64)> = Vec::new();
        for n in [
            0usize,
            1,
            2,
            3,
            7,
            8,
            9,
            63,
            64,
            65,
            1000,
            4096,
            1 << 20,
            usize::MAX,
        ] {
            for max in [
                0u64,
                1,
                2,
                3,
                7,
                8,
                1000,
                4095,
                4096,
                1 << 40,
                u64::MAX - 1,
                u64::MAX,
            ] {
                cases.push((n, max));
                cases.push((n, max.wrapping_mul(n as u64)));
                cases.push((n, (n as u64).wrapping_shl(max as u32 % 64)));
                cases.push((n, (n as u64).wrapping_shl(max as u32 % 64).wrapping_sub(1)));
            }
        }
        for _ in 0..200_000 {
            let r = next();
            let n = (next() >> (r % 64)) as usize;
            let max = next() >> ((r >> 8) % 64);
            cases.push((n, max));
        }
        for (n, max) in cases {
            assert_eq!(low_bits(n, max), by_div(n, max), "n {n} max {max}");
        }
    }

    fn enc(v: &[u64], max: u64, s: bool) -> Vec<u8> {
        let mut out = Vec::new();
        encode(v.iter().copied(), v.len(), max, s, s, &mut out);
        out
    }

    fn check(v: &[u64]) {
        let max = v.last().copied().unwrap_or(0);
        for s in [false, true] {
            let b = enc(v, max, s);
            let (ef, rest) = EfView::parse(&b, v.len(), max, s, s).unwrap();
            assert!(rest.is_empty());
            ef.validate(max, false).unwrap();
            assert_eq!(ef.iter().collect::<Vec<_>>(), v);
            for (i, &x) in v.iter().enumerate() {
                assert_eq!(ef.get(i), Some(x), "get {i}");
                if i > 0 {
                    assert_eq!(ef.get_pair(i), Some((v[i - 1], x)), "get_pair {i}");
                }
            }
            assert_eq!(ef.get_pair(0), None);
            let mut d = vec![7];
            ef.decode_into(3, &mut d);
            assert_eq!(d[0], 7);
            assert!(d[1..].iter().zip(v).all(|(a, b)| *a == b.wrapping_add(3)));
            assert_eq!(d.len(), v.len() + 1);
            let mut slice = vec![0u64; v.len()];
            assert!(ef.decode_to_slice(3, &mut slice));
            assert_eq!(slice, d[1..]);
            assert!(!ef.decode_to_slice(3, &mut vec![0u64; v.len() + 1]));
            assert_eq!(ef.get(v.len()), None);
            let mut probes: Vec<u64> = v
                .iter()
                .flat_map(|&x| [x, x.saturating_sub(1), x.saturating_add(1)])
                .collect();
            probes.extend([0, 1, u64::MAX, max / 2]);
            for p in probes {
                let lb = v.partition_point(|&x| x < p);
                assert_eq!(
                    ef.lower_bound(p),
                    (lb, lb < v.len() && v[lb] == p),
                    "lb {p}"
                );
            }
        }
    }

    #[test]
    fn round_trips_in_all_regimes() {
        check(&[]);
        check(&[0]);
        check(&[u64::MAX]);
        check(&[0, u64::MAX]);
        check(&[5, 5, 5, 9]);
        check(&(0..1000).collect::<Vec<_>>());
        check(&(0..300).map(|i| i * i * 977).collect::<Vec<_>>());
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for n in [1usize, 2, 63, 64, 65, 200, 3000] {
            let mut v: Vec<u64> = (0..n)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    s
                })
                .collect();
            v.sort_unstable();
            let base = v[0];
            check(&v.iter().map(|x| x - base).collect::<Vec<_>>());
            check(&v);
        }
    }

    /// The two-pass encoder `encode` replaced (low bits, then the high bits with samples
    /// gathered in vectors): the reference its bytes are checked against.
    fn encode_two_pass(values: &[u64], max: u64, ones: bool, zeros: bool) -> Vec<u8> {
        let n = values.len();
        let lay = Layout::new(n, max, ones, zeros).unwrap();
        let l = lay.l;
        let mut out = Vec::new();
        let mut acc: u128 = 0;
        let mut nbits: u32 = 0;
        if l > 0 {
            let mask = if l == 64 { u64::MAX } else { (1u64 << l) - 1 };
            for &v in values {
                acc |= ((v & mask) as u128) << nbits;
                nbits += l;
                while nbits >= 64 {
                    out.extend_from_slice(&(acc as u64).to_le_bytes());
                    acc >>= 64;
                    nbits -= 64;
                }
            }
            while nbits > 0 {
                out.push(acc as u8);
                acc >>= 8;
                nbits = nbits.saturating_sub(8);
            }
        }
        let high_at = out.len();
        out.resize(high_at + lay.high_bytes, 0);
        let (mut one_pos, mut zero_pos) = (Vec::new(), Vec::new());
        let mut next_zero = 0u64;
        for (i, &v) in values.iter().enumerate() {
            let h = v >> l;
            let p = h as usize + i;
            out[high_at + p / 8] |= 1 << (p % 8);
            if ones && i % SAMPLE == 0 {
                one_pos.push(p as u32);
            }
            if zeros {
                while next_zero < h {
                    if (next_zero as usize).is_multiple_of(SAMPLE) {
                        zero_pos.push((next_zero as usize + i) as u32);
                    }
                    next_zero += 1;
                }
            }
        }
        if zeros {
            while next_zero < lay.high_max {
                if (next_zero as usize).is_multiple_of(SAMPLE) {
                    zero_pos.push((next_zero as usize + n) as u32);
                }
                next_zero += 1;
            }
        }
        for p in one_pos.into_iter().chain(zero_pos) {
            out.extend_from_slice(&p.to_le_bytes());
        }
        out
    }

    #[test]
    fn one_pass_encoding_equals_the_two_pass_reference() {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut cases: Vec<(Vec<u64>, u64)> = vec![
            (vec![], 0),
            (vec![], 1000),
            (vec![0], 0),
            (vec![0], 5000),
            (vec![7, 7, 7], 7),
            (vec![0, 0, 0, 1 << 20], (1 << 20) + 777),
            (vec![u64::MAX], u64::MAX),
            (vec![0, u64::MAX], u64::MAX),
        ];
        for round in 0..3000 {
            let n = match round % 4 {
                0 => (next() % 8) as usize,
                1 => (next() % 200) as usize,
                2 => (next() % 5000) as usize,
                _ => 63 + (next() % 3) as usize,
            };
            // Value ranges from dense (many values per bucket) to sparse (many zeros between
            // ones), and a max past the last value (zeros after the last one).
            let bits = (next() % 65) as u32;
            let mut v: Vec<u64> = (0..n)
                .map(|_| if bits == 0 { 0 } else { next() >> (64 - bits) })
                .collect();
            v.sort_unstable();
            if round % 3 == 0 {
                v.dedup();
            }
            let last = v.last().copied().unwrap_or(0);
            let max = match round % 5 {
                0 => last,
                1 => last.saturating_add(next() % 10_000),
                2 => last.saturating_add(next() >> (next() % 64)),
                _ => last,
            };
            cases.push((v, max));
        }
        for (v, max) in cases {
            for (ones, zeros) in [(false, false), (true, false), (false, true), (true, true)] {
                let mut got = vec![0xa5; 3]; // appends after what is there
                encode(v.iter().copied(), v.len(), max, ones, zeros, &mut got);
                assert_eq!(&got[..3], &[0xa5; 3]);
                let want = encode_two_pass(&v, max, ones, zeros);
                assert_eq!(got[3..], want[..], "n {} max {max} {ones} {zeros}", v.len());
            }
        }
    }

    #[test]
    fn size_is_near_the_bound() {
        // 1000 values of 50 bits: l = 40, 42 bits each plus a byte.
        let v: Vec<u64> = (0..1000u64).map(|i| i << 40 | 12345).collect();
        let b = enc(&v, *v.last().unwrap(), false);
        assert!(b.len() <= 1000 * 42 / 8 + 2, "{}", b.len());
    }

    #[test]
    fn malformed_vectors_are_rejected_without_panic() {
        let v: Vec<u64> = (0..200).map(|i| i * 1000).collect();
        let max = *v.last().unwrap();
        let good = enc(&v, max, true);
        for i in 0..good.len() {
            for x in [1u8, 0x80, 0xff] {
                let mut b = good.clone();
                b[i] ^= x;
                let (ef, _) = EfView::parse(&b, v.len(), max, true, true).unwrap();
                let ok = ef.validate(max, false).is_ok();
                let _ = ef.iter().count();
                for p in [0, 5000, max, u64::MAX] {
                    let _ = ef.lower_bound(p);
                }
                for j in 0..=v.len() {
                    let _ = ef.get(j);
                }
                if ok {
                    let got: Vec<u64> = ef.iter().collect();
                    assert!(got.windows(2).all(|w| w[0] <= w[1]));
                }
            }
        }
        assert!(EfView::parse(&good[..good.len() - 1], v.len(), max, true, true).is_none());
    }
}
