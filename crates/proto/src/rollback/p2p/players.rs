//! The players of a [`P2pSession`]: who plays each slot, its inputs, and what this
//! side keeps of a local player (its input delay, its next input).

use super::super::input_queue::InputQueue;
use super::{MAX_INPUT_DELAY, P2pSession, PeerId, PlayerKind, SessionError, Tick};

/// One player slot of the match, as this side runs it.
#[derive(Debug, Clone)]
pub(super) struct Player {
    /// Who plays it.
    pub(super) seat: Seat,
    /// Its inputs: confirmed, predicted, and from which tick it is disconnected.
    pub(super) queue: InputQueue,
}

/// Who plays a slot, with what this side keeps of it.
#[derive(Debug, Clone)]
pub(super) enum Seat {
    /// Plays on this machine.
    Local(LocalPlayer),
    /// Plays behind this connection.
    Remote(PeerId),
}

/// What this side keeps of one of its own players.
#[derive(Debug, Clone)]
pub(super) struct LocalPlayer {
    /// Its inputs apply this many ticks after they are given.
    pub(super) delay: u32,
    /// Its input for the next advance (repeated until replaced).
    input: Vec<u8>,
    /// A majority of the live peers proposed it disconnected, and `RemovedByPeers`
    /// was raised (once).
    pub(super) removed_by_peers: bool,
}

impl Player {
    pub(super) fn new(kind: PlayerKind, queue: InputQueue, delay: u32, input_size: usize) -> Self {
        let seat = match kind {
            PlayerKind::Local => {
                Seat::Local(LocalPlayer { delay, input: vec![0; input_size], removed_by_peers: false })
            }
            PlayerKind::Remote(peer) => Seat::Remote(peer),
        };
        Player { seat, queue }
    }

    /// Who plays it, as the engine listed it.
    pub(super) fn kind(&self) -> PlayerKind {
        match self.seat {
            Seat::Local(_) => PlayerKind::Local,
            Seat::Remote(peer) => PlayerKind::Remote(peer),
        }
    }

    /// Whether it plays on this machine.
    pub(super) fn is_local(&self) -> bool {
        matches!(self.seat, Seat::Local(_))
    }
}

fn check_delay(delay: u32) -> Result<(), SessionError> {
    if delay > MAX_INPUT_DELAY {
        return Err(SessionError::InputDelay(delay));
    }
    Ok(())
}

impl P2pSession {
    /// The current input delay.
    /// The input delay of the first local player (every local player's, unless set
    /// per player); the configured one without local players.
    pub fn input_delay(&self) -> u32 {
        self.local.first().and_then(|&p| self.local_player(p).ok()).map_or(self.cfg.input_delay, |l| l.delay)
    }

    /// The input delay of local `player`.
    pub fn player_input_delay(&self, player: usize) -> Result<u32, SessionError> {
        Ok(self.local_player(player)?.delay)
    }

    /// Changes every local player's input delay from the next tick on. A longer delay
    /// repeats the last input to fill the gap; a shorter one drops inputs until the
    /// ticks catch up.
    pub fn set_input_delay(&mut self, delay: u32) -> Result<(), SessionError> {
        check_delay(delay)?;
        for p in &mut self.players {
            if let Seat::Local(l) = &mut p.seat {
                l.delay = delay;
            }
        }
        Ok(())
    }

    /// Changes local `player`'s input delay from the next tick on (GGPO's
    /// `ggpo_set_frame_delay`), as [`P2pSession::set_input_delay`] does for all.
    pub fn set_player_input_delay(&mut self, player: usize, delay: u32) -> Result<(), SessionError> {
        check_delay(delay)?;
        self.local_player_mut(player)?.delay = delay;
        Ok(())
    }

    /// What this side keeps of local `player`.
    fn local_player(&self, player: usize) -> Result<&LocalPlayer, SessionError> {
        match self.players.get(player).map(|p| &p.seat) {
            None => Err(SessionError::UnknownPlayer(player)),
            Some(Seat::Local(l)) => Ok(l),
            Some(Seat::Remote(_)) => Err(SessionError::NotLocal(player)),
        }
    }

    fn local_player_mut(&mut self, player: usize) -> Result<&mut LocalPlayer, SessionError> {
        match self.players.get_mut(player).map(|p| &mut p.seat) {
            None => Err(SessionError::UnknownPlayer(player)),
            Some(Seat::Local(l)) => Ok(l),
            Some(Seat::Remote(_)) => Err(SessionError::NotLocal(player)),
        }
    }

    /// The next tick of local input every peer can be sent: the local players' inputs
    /// go out together, tick by tick, so the one with the shortest delay sets it.
    pub(super) fn local_next(&self) -> Tick {
        self.local.iter().map(|&p| self.players[p].queue.next_needed()).min().unwrap_or(self.current)
    }

    /// Sets the engine's prediction for a remote player (None: back to the default).
    pub fn set_prediction(&mut self, player: usize, input: Option<&[u8]>) -> Result<(), SessionError> {
        let p = self.players.get_mut(player).ok_or(SessionError::UnknownPlayer(player))?;
        match input {
            Some(b) if b.len() != self.cfg.game.input_size => {
                return Err(SessionError::WrongInputSize { expected: self.cfg.game.input_size, got: b.len() });
            }
            _ => {}
        }
        p.queue.set_prediction(input);
        Ok(())
    }

    /// Gives a local player's input for the next [`P2pSession::advance`]. A local
    /// player without a new input repeats its previous one.
    pub fn add_local_input(&mut self, player: usize, input: &[u8]) -> Result<(), SessionError> {
        let expected = self.cfg.game.input_size;
        let l = self.local_player_mut(player)?;
        if input.len() != expected {
            return Err(SessionError::WrongInputSize { expected, got: input.len() });
        }
        l.input.copy_from_slice(input);
        Ok(())
    }

    /// Every input before this tick is confirmed.
    pub(super) fn confirmed_all(&self) -> Tick {
        self.players.iter().map(|p| p.queue.confirmed_until()).min().unwrap_or(Tick::MAX)
    }

    /// Puts each local player's input `delay` ticks ahead of the current tick.
    pub(super) fn add_local_inputs(&mut self) {
        for p in &mut self.players {
            let Seat::Local(l) = &p.seat else { continue };
            let target = self.current + l.delay;
            let q = &mut p.queue;
            while q.next_needed() < target {
                // The delay grew: repeat the last input over the gap.
                let t = q.next_needed();
                match t.checked_sub(1).and_then(|prev| q.confirmed(prev)) {
                    Some(b) => self.tmp.copy_from_slice(b),
                    None => self.tmp.fill(0),
                }
                q.add_confirmed(t, &self.tmp);
            }
            if q.next_needed() == target {
                q.add_confirmed(target, &l.input);
            }
        }
    }
}
