//! The toy game both libraries run (8 x i64 of state per player, a 2-byte input
//! from a seeded generator). It never allocates.

/// State words per player.
const WORDS: usize = 8;
const MAX_PLAYERS: usize = 4;

#[derive(Clone, Copy, Debug)]
pub(crate) struct GameState {
    pub(crate) words: [i64; WORDS * MAX_PLAYERS],
    pub(crate) players: usize,
}

impl GameState {
    pub(crate) fn new(players: usize) -> Self {
        let mut words = [0i64; WORDS * MAX_PLAYERS];
        for (i, w) in words.iter_mut().enumerate().take(players * WORDS) {
            *w = (i as i64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D);
        }
        GameState { words, players }
    }

    /// One tick: each player's input stirs its 8 words, which also feel a neighbour.
    pub(crate) fn step(&mut self, mut input_of: impl FnMut(usize) -> [u8; 2]) {
        let n = self.players * WORDS;
        for p in 0..self.players {
            let v = u16::from_le_bytes(input_of(p)) as i64;
            for k in 0..WORDS {
                let i = p * WORDS + k;
                let neighbour = self.words[(i + 3) % n];
                self.words[i] = self.words[i].rotate_left(7).wrapping_add(v.wrapping_mul(2 * k as i64 + 1)) ^ neighbour;
            }
        }
    }

    pub(crate) fn checksum(&self) -> u64 {
        let mut h: u64 = 0x6A09_E667_F3BC_C909;
        for &w in &self.words[..self.players * WORDS] {
            h = (h ^ w as u64).wrapping_mul(0x0000_0100_0000_01B3);
            h ^= h >> 29;
        }
        h
    }
}

/// Player `p`'s input for frame `f`: 10 buttons from a hash, changing every `period` frames.
pub(crate) fn input_for(seed: u64, p: usize, f: u64, period: u64) -> [u8; 2] {
    let mut x =
        seed ^ (p as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (f / period).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    ((x & 0x3ff) as u16).to_le_bytes()
}
