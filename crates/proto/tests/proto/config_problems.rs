//! Every session config takes the game's shape and reports every bad field at once,
//! each under its name (the shape's under `players`, `input_size`, `tick_rate_hz` and
//! `max_frame_us`), with the player limits of the named constants; the sessions refuse
//! what the configs report, with the same problems.

use tickwire_proto::CheckedConfig;
use tickwire_proto::{
    ClientSessionError, ConfigProblems, GameShape, MAX_INPUT_DELAY, MAX_INPUT_SIZE, MAX_PREDICTION, MAX_RELAY_PLAYERS,
    MAX_ROLLBACK_PLAYERS, P2pConfig, P2pSession, PlayerKind, RelayClientSession, RelayClientSessionConfig,
    RelayServerSession, RelayServerSessionConfig, ReplaySession, ServerSessionError, SessionError, SpectatorConfig,
    SpectatorSession, SyncTestSession,
};

/// The fields `problems` names, in order.
fn fields(problems: &ConfigProblems) -> Vec<&str> {
    problems.iter().map(|p| p.field.as_str()).collect()
}

/// A shape wrong in every field: no players, too large an input, no rate, no catch-up.
fn bad_shape() -> GameShape {
    GameShape { players: 0, input_size: MAX_INPUT_SIZE + 1, tick_rate_hz: f64::NAN, max_frame_us: 0 }
}

const SHAPE_FIELDS: [&str; 4] = ["players", "input_size", "tick_rate_hz", "max_frame_us"];

#[test]
fn a_relay_server_config_reports_every_bad_field() {
    let mut c = RelayServerSessionConfig::new(bad_shape());
    c.relay.send_interval = 0;
    c.relay.step_window = 1;
    c.relay.max_update_datagrams = 0;
    c.relay.jitter.max_input_size = 256;
    let problems = c.validate().unwrap_err();
    assert_eq!(
        fields(&problems),
        [
            &SHAPE_FIELDS[..],
            &["relay.send_interval", "relay.jitter.max_input_size", "relay.step_window"][..],
            &["relay.max_update_datagrams"][..]
        ]
        .concat()
    );
    let Err(ServerSessionError::Config(built)) = RelayServerSession::new(c, 0) else { panic!("a bad server built") };
    assert_eq!(built, problems);
}

#[test]
fn a_relay_client_config_reports_every_bad_field() {
    let mut c = RelayClientSessionConfig::new(bad_shape());
    c.max_prediction = 0;
    c.max_catchup_ticks = 0;
    c.sync.send_interval = 0;
    c.sync.tick.max_speedup = 0.6;
    c.sync.tick.snap_threshold_ticks = 0.5;
    let problems = c.validate().unwrap_err();
    assert_eq!(
        fields(&problems),
        [
            &SHAPE_FIELDS[..],
            &["max_prediction", "max_catchup_ticks", "sync.send_interval", "sync.tick.max_speedup"][..],
            &["sync.tick.snap_threshold_ticks"][..]
        ]
        .concat()
    );
    let Err(ClientSessionError::Config(built)) = RelayClientSession::new(c) else { panic!("a bad client built") };
    assert_eq!(built, problems);
}

#[test]
fn a_p2p_config_reports_every_bad_field() {
    let mut c = P2pConfig::new(bad_shape());
    c.input_delay = MAX_INPUT_DELAY + 1;
    c.history = 10;
    c.notify_after_us = c.disconnect_timeout_us;
    let problems = c.validate().unwrap_err();
    assert_eq!(fields(&problems), [&SHAPE_FIELDS[..], &["input_delay", "history", "notify_after_us"][..]].concat());
    let Err(SessionError::Config(built)) = P2pSession::new(c.clone(), &[], 0) else { panic!("a bad P2P built") };
    assert_eq!(built, problems);
    // A prediction window past the limit is reported, and the history is not judged
    // against it.
    c.max_prediction = MAX_PREDICTION + 1;
    assert!(fields(&c.validate().unwrap_err()).contains(&"max_prediction"));
    assert!(!fields(&c.validate().unwrap_err()).contains(&"history"));
    // Inputs that fit no datagram are the input size's problem.
    let problems = P2pConfig::new(GameShape::new(8, MAX_INPUT_SIZE)).validate().unwrap_err();
    assert_eq!(fields(&problems), ["input_size"]);
}

#[test]
fn a_spectator_config_reports_every_bad_field() {
    let mut c = SpectatorConfig::new(bad_shape());
    c.history = 63;
    c.catchup_speed = 0;
    let problems = c.validate().unwrap_err();
    assert_eq!(fields(&problems), [&SHAPE_FIELDS[..], &["history", "catchup_speed"][..]].concat());
    let Err(SessionError::Config(built)) = SpectatorSession::new(c, 1) else { panic!("a bad spectator built") };
    assert_eq!(built, problems);
    c.catchup_speed = 17;
    assert!(fields(&c.validate().unwrap_err()).contains(&"catchup_speed"));
}

#[test]
fn a_synctest_and_a_replay_check_the_shape() {
    let Err(SessionError::Config(p)) = SyncTestSession::new(bad_shape(), 0) else { panic!("a bad synctest built") };
    assert_eq!(fields(&p), [&SHAPE_FIELDS[..], &["check_distance"][..]].concat());
    let mut p = ConfigProblems::new();
    ReplaySession::check(&bad_shape(), &mut p);
    assert_eq!(fields(&p), SHAPE_FIELDS);
}

#[test]
fn the_relay_player_limit_is_the_named_constant() {
    let at = GameShape::new(MAX_RELAY_PLAYERS, 2);
    let past = GameShape::new(MAX_RELAY_PLAYERS + 1, 2);
    assert!(RelayServerSessionConfig::new(at).validate().is_ok());
    assert!(RelayClientSessionConfig::new(at).validate().is_ok());
    assert!(RelayServerSession::new(RelayServerSessionConfig::new(at), 0).is_ok());
    assert!(RelayClientSession::new(RelayClientSessionConfig::new(at)).is_ok());
    let want = format!("players: {} is not in 1..={MAX_RELAY_PLAYERS}", MAX_RELAY_PLAYERS + 1);
    assert_eq!(RelayServerSessionConfig::new(past).validate().unwrap_err().to_string(), want);
    assert_eq!(RelayClientSessionConfig::new(past).validate().unwrap_err().to_string(), want);
}

#[test]
fn the_rollback_player_limit_is_the_named_constant() {
    let (at, past) = (GameShape::new(MAX_ROLLBACK_PLAYERS, 1), GameShape::new(MAX_ROLLBACK_PLAYERS + 1, 1));
    let want = format!("players: {} is not in 1..={MAX_ROLLBACK_PLAYERS}", MAX_ROLLBACK_PLAYERS + 1);
    assert!(SpectatorConfig::new(at).validate().is_ok());
    assert_eq!(SpectatorConfig::new(past).validate().unwrap_err().to_string(), want);
    assert!(SyncTestSession::new(at, 2).is_ok());
    assert!(matches!(SyncTestSession::new(past, 2), Err(SessionError::Config(p)) if p.to_string() == want));
    // P2P holds no more than a datagram takes (far below the limit); past the limit
    // the count is the only problem named.
    let p = P2pConfig::new(past).validate().unwrap_err();
    assert_eq!(p.to_string(), want);
}

#[test]
fn a_p2p_player_list_must_agree_with_the_shape() {
    let c = P2pConfig::new(GameShape::new(3, 2));
    let two = [PlayerKind::Local, PlayerKind::Remote(1)];
    assert_eq!(P2pSession::new(c.clone(), &two, 0).err(), Some(SessionError::PlayerCount { game: 3, listed: 2 }));
    let three = [PlayerKind::Local, PlayerKind::Remote(1), PlayerKind::Remote(0)];
    assert_eq!(P2pSession::new(c.clone(), &three, 0).err(), Some(SessionError::PeerIdZero(2)));
    let three = [PlayerKind::Local, PlayerKind::Remote(1), PlayerKind::Remote(1)];
    assert_eq!(P2pSession::new(c, &three, 0).unwrap().num_players(), 3);
}
