//! The attack of issue 30, finding 1, as a test tool: recover the state of a
//! xoshiro256** generator from consecutive outputs (each output reveals the word `s[1]`
//! exactly; the state update is linear over GF(2), so 256 output bits of `s[1]` fix the
//! 256-bit state), then predict its next outputs. Session tokens came from such a
//! generator; a player who saw four of its own tokens computed everyone else's.

/// A 256-bit row over GF(2): which bits of the unknown initial state a bit depends on.
type Row = [u64; 4];

fn xor(a: &Row, b: &Row) -> Row {
    [a[0] ^ b[0], a[1] ^ b[1], a[2] ^ b[2], a[3] ^ b[3]]
}

/// One 64-bit word of state, each bit a linear form of the initial state.
type Word = [Row; 64];

fn word_xor(a: &Word, b: &Word) -> Word {
    std::array::from_fn(|i| xor(&a[i], &b[i]))
}

fn word_shl(a: &Word, n: usize) -> Word {
    std::array::from_fn(|i| if i >= n { a[i - n] } else { [0; 4] })
}

fn word_rotl(a: &Word, n: usize) -> Word {
    std::array::from_fn(|i| a[(i + 64 - n) % 64])
}

/// The multiplicative inverse of an odd number modulo 2^64 (Newton's iteration).
fn inverse(a: u64) -> u64 {
    let mut x = a; // correct to 3 bits for odd a
    for _ in 0..6 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
    }
    x
}

/// The `s[1]` that produced `output`: undoes `rotl(s1 * 5, 7) * 9`.
fn s1_of(output: u64) -> u64 {
    output.wrapping_mul(inverse(9)).rotate_right(7).wrapping_mul(inverse(5))
}

fn step(s: &mut [u64; 4]) -> u64 {
    let out = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
    let t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = s[3].rotate_left(45);
    out
}

/// From consecutive outputs of one xoshiro256** generator, the next `n` outputs; None
/// if no state explains them (they did not come from such a generator).
pub fn predict_next(outputs: &[u64], n: usize) -> Option<Vec<u64>> {
    // Symbolic state: bit b of word w is initial bit 64*w + b.
    let mut s: [Word; 4] = std::array::from_fn(|w| {
        std::array::from_fn(|b| {
            let mut r = [0u64; 4];
            r[w] = 1 << b;
            r
        })
    });
    let mut equations: Vec<(Row, bool)> = Vec::new();
    for &out in outputs {
        let s1 = s1_of(out);
        for (b, row) in s[1].iter().enumerate() {
            equations.push((*row, s1 >> b & 1 == 1));
        }
        let t = word_shl(&s[1], 17);
        s[2] = word_xor(&s[2], &s[0]);
        s[3] = word_xor(&s[3], &s[1]);
        s[1] = word_xor(&s[1], &s[2]);
        s[0] = word_xor(&s[0], &s[3]);
        s[2] = word_xor(&s[2], &t);
        s[3] = word_rotl(&s[3], 45);
    }
    // Gaussian elimination over GF(2).
    let bit = |r: &Row, i: usize| r[i / 64] >> (i % 64) & 1 == 1;
    let mut pivots: Vec<(usize, Row, bool)> = Vec::new();
    for (mut row, mut rhs) in equations {
        for (p, prow, prhs) in &pivots {
            if bit(&row, *p) {
                row = xor(&row, prow);
                rhs ^= prhs;
            }
        }
        match (0..256).find(|&i| bit(&row, i)) {
            Some(p) => {
                for (_, prow, prhs) in pivots.iter_mut() {
                    if bit(prow, p) {
                        *prow = xor(prow, &row);
                        *prhs ^= rhs;
                    }
                }
                pivots.push((p, row, rhs));
            }
            None if rhs => return None, // inconsistent: no such generator
            None => {}
        }
    }
    if pivots.len() < 256 {
        return None; // not enough outputs to pin the state down
    }
    let mut state = [0u64; 4];
    for (p, _, rhs) in &pivots {
        if *rhs {
            state[p / 64] |= 1 << (p % 64);
        }
    }
    for _ in outputs {
        step(&mut state);
    }
    Some((0..n).map(|_| step(&mut state)).collect())
}

#[test]
fn the_attack_works_on_xoshiro() {
    let mut s = [0x1234_5678_9abc_def0, 0x0fed_cba9_8765_4321, 42, 7];
    let outs: Vec<u64> = (0..8).map(|_| step(&mut s)).collect();
    assert_eq!(predict_next(&outs[..5], 3), Some(outs[5..8].to_vec()));
}
