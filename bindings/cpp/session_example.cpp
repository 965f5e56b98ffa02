/*
 * tickwire C++ session example, through tickwire.hpp's tickwire::Session:
 *   1. a SYNCTEST session checks that a small game is deterministic (every tick rolled
 *      back and simulated again), and catches a deliberately nondeterministic variant;
 *   2. two P2P peers in one process, over 127.0.0.1 through the link simulator, play
 *      the game for a couple of seconds and must agree on the checksum of every tick
 *      both have confirmed; the connection is encrypted and both peers hold the match's
 *      secret (tickwire::generate_key, tickwire::SecurityConfig::match); once synchronized
 *      each greets the other on the session's message side channel (send_message, a
 *      MESSAGE event, read_message);
 *   3. a relay match: a RELAY_SERVER session and two RELAY_CLIENT sessions predicting
 *      ahead of it, over 127.0.0.1 through the link simulator; the server admits only
 *      clients with a connect token (the example plays the backend: one key, one token
 *      per client, tickwire::connect_token_generate); early on one client asks for a new
 *      snapshot (request_snapshot); at the end every client's authoritative checksums
 *      must equal the server's, and the server's per-player figures (player_stats) must
 *      show each client; the server's engine must know each client by its token's client id
 *      and user data (PLAYER_JOINED, player_identity), and a kicked player's slot by none.
 * Also shows the exception a setup call throws and the RAII cleanup.
 *
 *   cargo build
 *   ln -sf libtickwire.so target/debug/libtickwire.so.1   # its SONAME (the ABI version)
 *   c++ -std=c++17 -Wall -Wextra -Werror -Iinclude -Ibindings/cpp bindings/cpp/session_example.cpp \
 *       -Ltarget/debug -ltickwire -o build/cpp-session-example
 *   LD_LIBRARY_PATH=target/debug build/cpp-session-example [seconds]
 *
 * Exit status 0 on success, 1 on failure.
 */
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tickwire.hpp"

namespace {

constexpr std::uint32_t kPlayers = 2;
constexpr std::size_t kHistory = 4096;  // ticks of checksums kept per peer

// The whole game state; snapshots are copies of it.
struct Game {
    std::array<std::int32_t, kPlayers> x{}, y{}, score{};
    std::uint32_t hidden = 0;   // outside the checksum: only the nondeterministic variant reads it
    bool nondeterministic = false;

    std::uint64_t checksum() const {
        std::uint64_t h = 14695981039346656037ull;
        auto mix = [&h](std::int32_t v) { h = (h ^ static_cast<std::uint32_t>(v)) * 1099511628211ull; };
        for (std::uint32_t p = 0; p < kPlayers; ++p) {
            mix(x[p]);
            mix(y[p]);
            mix(score[p]);
        }
        return h;
    }

    // One tick; inputs are one byte per player: bits 0-3 = left, right, up, down.
    void step(const std::uint8_t *inputs) {
        for (std::uint32_t p = 0; p < kPlayers; ++p) {
            const std::uint8_t in = inputs[p];
            x[p] += ((in >> 1) & 1) - (in & 1);
            y[p] += ((in >> 3) & 1) - ((in >> 2) & 1);
            if (x[p] == x[1 - p] && y[p] == y[1 - p]) {
                score[p] += 1;
            }
        }
        if (nondeterministic && ++hidden % 5 == 0) {
            x[0] += 1;  // depends on how often step ran, not on the state: rollbacks expose it
        }
    }
};

std::uint8_t input_at(std::uint32_t player, std::uint32_t tick) {
    std::uint32_t v = (tick / 8) * 2654435761u ^ (player + 1) * 40503u;
    return static_cast<std::uint8_t>((v >> 13) & 0x0f);
}

// An engine around one session: the game, its snapshots, and the checksum of each saved tick.
struct Engine {
    const char *name;
    tickwire::Session session;
    Game game;
    std::vector<Game> slots;
    std::array<std::uint32_t, kHistory> saved_tick{};  // tick + 1; 0 = none
    std::array<std::uint64_t, kHistory> saved_sum{};
    bool failed = false;
    bool synchronized = false;
    bool greeted = false;   // its chat line went out on the message side channel
    std::string heard;      // the other peer's chat line, as read
    // A relay server records the state after every ADVANCE (it saves only now and then).
    bool record_after_advance = false;
    std::uint32_t state_pairs = 0;  // SYNCTEST: mismatch state pairs taken

    Engine(const char *n, const tw_session_config &config)
        : name(n), session(config), slots(session.state_slots()) {}
    Engine(const char *n, const tw_session_config &config, const tickwire::SecurityConfig &security)
        : name(n), session(config, security), slots(session.state_slots()) {}

    void fail(const char *what, tw_result r) {
        std::fprintf(stderr, "%s: %s: %s: %s\n", name, what, tickwire::result_name(r),
                     tickwire::last_error_message().c_str());
        failed = true;
    }

    void run_requests() {
        tw_request r;
        while (session.poll_request(r)) {
            std::size_t n = 0;
            switch (r.kind) {
            case TW_REQUEST_KIND_SAVE: {
                slots[r.slot] = game;
                const std::uint64_t sum = game.checksum();
                if (!record_after_advance) remember(r.tick, sum);  // the last save of a tick wins
                if (tw_result c = session.confirm_save(r.tick, sum); TW_FAILED(c)) fail("confirm_save", c);
                break;
            }
            case TW_REQUEST_KIND_LOAD:
                game.x = slots[r.slot].x;  // the state only: `hidden` is outside it
                game.y = slots[r.slot].y;
                game.score = slots[r.slot].score;
                break;
            case TW_REQUEST_KIND_ADVANCE: {
                std::array<std::uint8_t, kPlayers> inputs{};
                if (tw_result c = session.read_inputs(inputs, n); TW_FAILED(c)) {
                    fail("read_inputs", c);
                } else {
                    game.step(inputs.data());  // TW_REQUEST_FLAG_RESIMULATING: a game would mute effects
                    if (record_after_advance) remember(r.tick + 1, game.checksum());
                }
                break;
            }
            case TW_REQUEST_KIND_RESTORE: {  // a relay client's join snapshot: the server's state
                Game server_state;
                if (tw_result c = session.read_state(tickwire::mutable_bytes(&server_state, sizeof(Game)), n); TW_FAILED(c)) {
                    fail("read_state", c);
                } else {
                    game.x = server_state.x;
                    game.y = server_state.y;
                    game.score = server_state.score;
                }
                break;
            }
            case TW_REQUEST_KIND_DUMP_STATE:  // a desync dump or a spectator's snapshot
                if (tw_result c = session.provide_state(r.tick, tickwire::bytes(&slots[r.slot], sizeof(Game))); TW_FAILED(c)) {
                    fail("provide_state", c);
                }
                break;
            default:
                break;
            }
        }
    }

    void remember(std::uint32_t tick, std::uint64_t sum) {
        saved_tick[tick % kHistory] = tick + 1;
        saved_sum[tick % kHistory] = sum;
    }

    bool sum_of(std::uint32_t tick, std::uint64_t &sum) const {
        sum = saved_sum[tick % kHistory];
        return saved_tick[tick % kHistory] == tick + 1;
    }
};

// SYNCTEST: 300 ticks; returns the mismatches the session found.
std::uint64_t synctest(bool nondeterministic) {
    tw_session_config cfg = tickwire::default_session_config(TW_SESSION_MODE_SYNCTEST);
    cfg.num_players = kPlayers;
    cfg.input_size = 1;
    cfg.check_distance = 3;
    Engine e("synctest", cfg);
    e.game.nondeterministic = nondeterministic;
    e.session.start();
    for (std::uint32_t t = 0; t < 300 && !e.failed; ++t) {
        for (std::uint32_t p = 0; p < kPlayers; ++p) {
            const std::uint8_t in = input_at(p, t);
            if (tw_result r = e.session.push_input(p, tickwire::bytes(&in, 1)); TW_FAILED(r)) e.fail("push_input", r);
        }
        if (tw_result r = e.session.advance(); r != TW_RESULT_OK) e.fail("advance", r);
        e.run_requests();
        tw_session_event ev;
        while (e.session.poll_event(ev)) {
            if (ev.kind == TW_SESSION_EVENT_KIND_SYNCTEST_STATES_READY) {
                // Both states of the mismatch, to write out and diff (GGPO's log_game_state).
                const auto saved = e.session.take_synctest_state(TW_SYNCTEST_STATE_SAVED);
                const auto resimulated = e.session.take_synctest_state(TW_SYNCTEST_STATE_RESIMULATED);
                if (saved.empty() || saved.size() != resimulated.size() || saved == resimulated) e.failed = true;
                ++e.state_pairs;
            }
        }
    }
    tw_session_stats st;
    e.session.stats(st);
    if (nondeterministic != (e.state_pairs > 0)) {
        std::fprintf(stderr, "synctest: %u mismatch state pairs\n", static_cast<unsigned>(e.state_pairs));
        std::exit(1);
    }
    if (e.failed || st.current_tick != 300) {
        std::fprintf(stderr, "synctest: stopped at tick %u\n", static_cast<unsigned>(st.current_tick));
        std::exit(1);
    }
    return st.synctest_mismatches;
}

// One engine frame of a P2P peer: the ticks due, each with this player's input.
void frame(Engine &e, std::uint32_t me) {
    std::uint32_t due = 0;
    if (tw_result r = e.session.ticks_due(due); TW_FAILED(r)) {
        e.fail("ticks_due", r);
        return;
    }
    while (due--) {
        tw_session_stats st;
        e.session.stats(st);
        const std::uint8_t in = input_at(me, st.current_tick + st.input_delay);
        if (tw_result r = e.session.push_input(me, tickwire::bytes(&in, 1)); TW_FAILED(r)) e.fail("push_input", r);
        if (tw_result r = e.session.advance(); TW_FAILED(r)) e.fail("advance", r);  // statuses are not errors
        e.run_requests();
    }
    // Chat rides the session's own connection, never in the way of the inputs.
    // TW_RESULT_QUEUE_FULL only means: try again next frame.
    if (e.synchronized && !e.greeted) {
        const std::string line = "gg from player " + std::to_string(me);
        const tw_result r = e.session.send_message(TW_SESSION_MESSAGE_TARGET_ALL, tickwire::bytes(line.data(), line.size()));
        if (r == TW_RESULT_OK) e.greeted = true;
        else if (r != TW_RESULT_QUEUE_FULL) e.fail("send_message", r);
    }
    tw_session_event ev;
    while (e.session.poll_event(ev)) {
        if (ev.kind == TW_SESSION_EVENT_KIND_SYNCHRONIZED) {
            std::printf("%s: synchronized\n", e.name);
            e.synchronized = true;
        }
        if (ev.kind == TW_SESSION_EVENT_KIND_MESSAGE) {  // read it before polling again
            std::array<std::uint8_t, 64> text{};
            std::size_t n = 0;
            if (tw_result r = e.session.read_message(text, n); TW_FAILED(r)) {
                e.fail("read_message", r);
            } else {
                e.heard.assign(reinterpret_cast<const char *>(text.data()), n);
                std::printf("%s: chat from player %u: %s\n", e.name, static_cast<unsigned>(ev.data.message.player),
                            e.heard.c_str());
            }
        }
        if (ev.kind == TW_SESSION_EVENT_KIND_DESYNC) {
            std::fprintf(stderr, "%s: DESYNC at tick %u\n", e.name, static_cast<unsigned>(ev.data.desync.tick));
            e.failed = true;
        }
        if (ev.kind == TW_SESSION_EVENT_KIND_FATAL) {
            std::fprintf(stderr, "%s: %.*s\n", e.name, static_cast<int>(tickwire::fatal_message(ev).size()),
                         tickwire::fatal_message(ev).data());
            e.failed = true;
        }
    }
}

// A relay node: an engine plus what its events said.
struct RelayNode {
    Engine e;
    std::uint32_t index = 0;   // a client's bot
    std::uint32_t pushed = 0;  // a client's inputs so far
    std::uint32_t player = TW_NO_PLAYER, join_tick = 0, joins = 0, resyncs = 0;
    bool synchronized = false;
    bool expect_kick = false;  // the server kicks this client: SERVER_LOST is then the answer
    std::uint32_t lost_reason = 0;  // a client's SERVER_LOST
    std::uint32_t kick_code = 0;    // the server's PLAYER_KICKED: the engine's reason_code
    // The server's PLAYER_JOINED events: what each joining connection proved, by slot.
    std::uint32_t join_credential[kPlayers] = {};
    std::uint64_t join_client_id[kPlayers] = {};
    std::uint32_t server_joins = 0;

    RelayNode(const char *name, const tw_session_config &config, const tickwire::SecurityConfig &security)
        : e(name, config, security) {}
};

// One engine frame of a relay node: a client pushes its input as TW_LOCAL_PLAYER every
// due tick; the server has no input of its own.
void relay_frame(RelayNode &n, bool client) {
    std::uint32_t due = 0;
    if (tw_result r = n.e.session.ticks_due(due); TW_FAILED(r)) {
        n.e.fail("ticks_due", r);
        return;
    }
    while (due--) {
        if (client) {
            const std::uint8_t in = input_at(n.index, n.pushed++);
            if (tw_result r = n.e.session.push_input(TW_LOCAL_PLAYER, tickwire::bytes(&in, 1)); TW_FAILED(r)) {
                n.e.fail("push_input", r);
            }
        }
        if (tw_result r = n.e.session.advance(); TW_FAILED(r)) n.e.fail("advance", r);  // NOT_SYNCHRONIZED is a status
        n.e.run_requests();
    }
    tw_session_event ev;
    while (n.e.session.poll_event(ev)) {
        switch (ev.kind) {
        case TW_SESSION_EVENT_KIND_PLAYER_JOINED:
            if (!client) std::printf("%s: player %u joined at tick %u\n", n.e.name, static_cast<unsigned>(ev.data.relay.player),
                                     static_cast<unsigned>(ev.data.relay.tick));
            if (!client && ev.data.relay.player < kPlayers) {
                n.join_credential[ev.data.relay.player] = ev.data.relay.credential;
                n.join_client_id[ev.data.relay.player] = ev.data.relay.client_id;
                ++n.server_joins;
            }
            break;
        case TW_SESSION_EVENT_KIND_JOINED:
            n.player = ev.data.relay.player;
            n.join_tick = ev.data.relay.tick;
            ++n.joins;
            std::printf("%s: joined as player %u at tick %u\n", n.e.name, static_cast<unsigned>(n.player), static_cast<unsigned>(n.join_tick));
            break;
        case TW_SESSION_EVENT_KIND_SYNCHRONIZED:
            n.synchronized = true;
            break;
        case TW_SESSION_EVENT_KIND_PLAYER_KICKED:
            // The code stays on the server; the client sees KICKED_BY_ENGINE only.
            if (ev.data.relay.reason == TW_KICK_REASON_ENGINE) n.kick_code = ev.data.relay.code;
            break;
        case TW_SESSION_EVENT_KIND_RESYNCING:
            ++n.resyncs;
            break;
        case TW_SESSION_EVENT_KIND_DESYNC:
            std::fprintf(stderr, "%s: DESYNC at tick %u\n", n.e.name, static_cast<unsigned>(ev.data.desync.tick));
            n.e.failed = true;
            break;
        case TW_SESSION_EVENT_KIND_SERVER_LOST:
            n.lost_reason = ev.data.relay.reason;
            if (n.expect_kick) {
                std::printf("%s: kicked by the server (tw_disconnect_reason %u)\n", n.e.name, static_cast<unsigned>(n.lost_reason));
                break;
            }
            std::fprintf(stderr, "%s: lost the server (tw_disconnect_reason %u)\n", n.e.name, static_cast<unsigned>(ev.data.relay.reason));
            n.e.failed = true;
            break;
        case TW_SESSION_EVENT_KIND_FATAL: {
            const std::string_view why = tickwire::fatal_message(ev);
            std::fprintf(stderr, "%s: the network thread stopped: %.*s\n", n.e.name, static_cast<int>(why.size()), why.data());
            n.e.failed = true;
            break;
        }
        default:
            break;
        }
    }
}

// The backend's ids of the two relay clients (all 64 bits used) and their user data: a
// string with its terminator, and a 40-byte record; the library pads both to 256 bytes.
constexpr std::uint64_t kClientIds[2] = {0x00C0FFEE00000001ull, 0xFEDCBA9876543210ull};
const std::string kUserData[2] = {std::string("ranked:gold", 12), std::string(40, '\x5a')};

// Who is who: the server saw each client join with its connect token's client
// id (PLAYER_JOINED), and player_identity gives each slot's id and user data, zero-padded;
// a free slot is EMPTY. Prints what it read.
bool check_identities(RelayNode &server, const std::vector<RelayNode> &clients) {
    bool ok = server.server_joins == 2;
    bool taken[kPlayers] = {};
    for (std::size_t i = 0; i < clients.size(); ++i) {
        const std::uint32_t p = clients[i].player;
        if (p >= kPlayers) return false;
        taken[p] = true;
        tw_player_identity id{};
        const tw_result r = server.e.session.player_identity(p, id);
        std::uint8_t want[sizeof id.user_data] = {};
        std::copy(kUserData[i].begin(), kUserData[i].end(), want);
        const bool good = r == TW_RESULT_OK && id.credential == TW_CREDENTIAL_CONNECT_TOKEN && id.client_id == kClientIds[i] &&
                          std::equal(std::begin(want), std::end(want), std::begin(id.user_data)) &&
                          server.join_credential[p] == TW_CREDENTIAL_CONNECT_TOKEN && server.join_client_id[p] == kClientIds[i];
        std::printf("%s: identity of player %u: %s, credential %u, client id %016llx (joined with %016llx)%s\n",
                    clients[i].e.name, static_cast<unsigned>(p), tickwire::result_name(r), static_cast<unsigned>(id.credential),
                    static_cast<unsigned long long>(id.client_id), static_cast<unsigned long long>(server.join_client_id[p]),
                    good ? "" : ": WRONG");
        ok = ok && good;
    }
    for (std::uint32_t p = 0; p < kPlayers; ++p) {
        if (taken[p]) continue;
        tw_player_identity id{};
        id.client_id = 77;  // untouched on EMPTY
        ok = ok && server.e.session.player_identity(p, id) == TW_RESULT_EMPTY && id.client_id == 77;
    }
    return ok;
}

// A relay server and two clients for `seconds` once both are caught up; client 2 asks for a
// new snapshot a quarter of the way in. Returns true when every client agrees with the server.
bool relay_match(double seconds) {
    tw_link_sim_config sim = tickwire::default_link_sim();
    sim.latency_us = 20000;
    sim.jitter_kind = TW_JITTER_KIND_UNIFORM;
    sim.jitter_us = 4000.0;
    sim.loss_kind = TW_LOSS_KIND_BERNOULLI;
    sim.loss_probability = 0.01;

    // The backend: one key, shared with the servers and nobody else.
    const tickwire::key_bytes backend_key = tickwire::generate_key();
    // The clients' tokens name the server's address: a real server is told its public one
    // (public_address); left empty, as here, it is the address the server is bound to
    // (127.0.0.1 and a free port), read back once the server exists.
    tw_session_config scfg = tickwire::relay_server_config(kPlayers, 1, "127.0.0.1:0");
    scfg.desync_interval = 10;  // the clients compare their state with the server's every 10 ticks
    scfg.host.sim_seed = 60;
    RelayNode server("relay server", scfg, tickwire::SecurityConfig::relay_server(backend_key, ""));
    const std::string address = server.e.session.local_address();
    std::printf("relay: encrypted; relay clients admitted by connect token\n");
    server.e.record_after_advance = true;
    server.e.session.set_link_sim(TW_DIRECTION_OUTBOUND, sim);
    server.e.session.start();

    std::vector<RelayNode> clients;
    clients.reserve(2);
    for (std::uint32_t i = 0; i < 2; ++i) {
        tw_session_config ccfg = tickwire::relay_client_config(kPlayers, 1, "127.0.0.1:0");
        ccfg.max_prediction = 16;
        ccfg.host.sim_seed = 61 + i;
        // The backend mints each player a token for this server, good for the match (a client
        // gets it over HTTPS in a game); the client shows it when it connects. The client id
        // and user data (its account and loadout, say) reach the server's engine as the
        // backend sealed them: player_identity below checks that they arrive intact.
        const tickwire::connect_token token = tickwire::connect_token_generate(
            backend_key, ccfg.host.protocol_id, kClientIds[i], address, 300, 0, tickwire::bytes(kUserData[i]));
        clients.emplace_back(i == 0 ? "relay client 1" : "relay client 2", ccfg, tickwire::SecurityConfig::relay_client(token));
        RelayNode &c = clients.back();
        c.index = i;
        c.e.session.set_link_sim(TW_DIRECTION_OUTBOUND, sim);
        c.e.session.set_server(address);
        c.e.session.start();
    }

    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::seconds(30);
    clock::time_point synced_at{};
    bool all_synced = false, asked = false;
    while (clock::now() < deadline && !server.e.failed && !clients[0].e.failed && !clients[1].e.failed) {
        relay_frame(server, false);
        for (RelayNode &c : clients) relay_frame(c, true);
        if (!all_synced && clients[0].synchronized && clients[1].synchronized) {
            all_synced = true;
            synced_at = clock::now();
        }
        const double elapsed = all_synced ? std::chrono::duration<double>(clock::now() - synced_at).count() : 0.0;
        if (all_synced && !asked && elapsed >= seconds / 4) {
            // What a client does after a DESYNC event: drop its timeline, take the server's state again.
            if (tw_result r = clients[1].e.session.request_snapshot(); TW_FAILED(r)) clients[1].e.fail("request_snapshot", r);
            asked = true;
        }
        if (all_synced && elapsed >= seconds && clients[1].joins == 2) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }

    bool ok = all_synced && asked && !server.e.failed;
    for (RelayNode &c : clients) {
        tw_session_stats st{};
        c.e.session.stats(st);
        std::uint32_t compared = 0, differ = 0;
        for (std::uint32_t t = c.join_tick; t < st.confirmed_tick; ++t) {  // from its latest join
            std::uint64_t mine = 0, theirs = 0;
            if (c.e.sum_of(t, mine) && server.e.sum_of(t, theirs)) {
                ++compared;
                differ += mine != theirs;
            }
        }
        tw_relay_player_stats ps{};
        const bool have_stats = server.e.session.player_stats(c.player, ps) == TW_RESULT_OK;
        std::printf("%s: player %u, authoritative tick %u, compared %u, different %u; rtt %.1f ms, lead %.2f, "
                    "prediction %u, resimulated %llu, joins %u, resyncs %u; server: buffer %u, ticks %llu, rtt %.1f ms\n",
                    c.e.name, static_cast<unsigned>(c.player), static_cast<unsigned>(st.confirmed_tick),
                    static_cast<unsigned>(compared), static_cast<unsigned>(differ), st.rtt_us / 1000.0, st.lead_ticks,
                    static_cast<unsigned>(st.prediction_distance), static_cast<unsigned long long>(st.resimulated_ticks),
                    static_cast<unsigned>(c.joins), static_cast<unsigned>(c.resyncs), static_cast<unsigned>(ps.buffer_depth),
                    static_cast<unsigned long long>(ps.ticks), ps.rtt_us / 1000.0);
        ok = ok && !c.e.failed && compared >= 60 && differ == 0 && st.local_player == c.player && st.rtt_us > 0.0 &&
             st.lead_ticks > 0.0 && have_stats && ps.player == c.player && ps.ticks > 60 && ps.rtt_us > 0.0;
    }
    // Client 2 asked for a new snapshot once: RESYNCING, then a second JOINED.
    ok = ok && clients[0].joins == 1 && clients[1].joins == 2 && clients[1].resyncs == 1;
    tw_relay_player_stats none{};
    ok = ok && server.e.session.player_stats(kPlayers, none) == TW_RESULT_INVALID_ARGUMENT;
    ok = check_identities(server, clients) && ok;

    // The engine's own kick: client 1 sees SERVER_LOST with KICKED_BY_ENGINE, the server
    // PLAYER_KICKED with the engine's code.
    clients[0].expect_kick = true;
    server.e.session.kick_player(clients[0].player, 7);
    const auto kick_end = clock::now() + std::chrono::seconds(3);
    while (clock::now() < kick_end && clients[0].lost_reason == 0) {
        relay_frame(server, false);
        for (RelayNode &c : clients) relay_frame(c, true);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::printf("kick: client 1 saw reason %u, the server code %u\n", static_cast<unsigned>(clients[0].lost_reason),
                static_cast<unsigned>(server.kick_code));
    ok = ok && clients[0].lost_reason == TW_DISCONNECT_REASON_KICKED_BY_ENGINE && server.kick_code == 7 &&
         !clients[1].e.failed && !server.e.failed;
    // The kicked player's slot is free: its identity went with it.
    tw_player_identity gone{};
    const tw_result gone_r = server.e.session.player_identity(clients[0].player, gone);
    std::printf("kick: identity of the freed slot %u: %s\n", static_cast<unsigned>(clients[0].player), tickwire::result_name(gone_r));
    ok = ok && gone_r == TW_RESULT_EMPTY;
    return ok;
}

}  // namespace

int main(int argc, char **argv) {
    const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
    try {
        // A setup call that fails throws tickwire::Error with the code and the message.
        try {
            tw_session_config bad = tickwire::default_session_config(TW_SESSION_MODE_P2P);
            bad.num_players = 0;
            tickwire::Session s(bad);
            std::fprintf(stderr, "expected an error for 0 players\n");
            return 1;
        } catch (const tickwire::Error &e) {
            std::printf("as expected: %s\n", e.what());
            if (e.code() != TW_RESULT_INVALID_ARGUMENT) return 1;
        }

        // A bad security setting is refused at creation, the message naming the field.
        try {
            tickwire::SecurityConfig plain = tickwire::SecurityConfig::insecure_plaintext();
            plain.set_match_secret(tickwire::generate_key());  // plaintext cannot prove a secret
            tickwire::Session s(tickwire::default_session_config(TW_SESSION_MODE_P2P), plain);
            std::fprintf(stderr, "expected an error for plaintext with a match secret\n");
            return 1;
        } catch (const tickwire::Error &e) {
            std::printf("as expected: %s\n", e.what());
            if (e.code() != TW_RESULT_INVALID_ARGUMENT || e.native_message().find("tw_security_config.mode") == std::string::npos) {
                return 1;
            }
        }

        const std::uint64_t clean = synctest(false);
        const std::uint64_t caught = synctest(true);
        std::printf("synctest: %llu mismatches for the game, %llu for a nondeterministic variant\n",
                    static_cast<unsigned long long>(clean), static_cast<unsigned long long>(caught));
        if (clean != 0 || caught == 0) return 1;
        // Announcing a stall (a loading screen) is for P2P sessions only.
        try {
            tw_session_config st = tickwire::default_session_config(TW_SESSION_MODE_SYNCTEST);
            tickwire::Session s(st);
            s.set_loading(true);
            std::fprintf(stderr, "expected an error for set_loading on a SYNCTEST session\n");
            return 1;
        } catch (const tickwire::Error &e) {
            std::printf("as expected: %s\n", e.what());
            if (e.code() != TW_RESULT_INVALID_STATE || e.native_message().find("tw_session_set_loading") == std::string::npos) {
                return 1;
            }
        }

        tw_session_config cfg = tickwire::default_session_config(TW_SESSION_MODE_P2P);
        cfg.num_players = kPlayers;
        cfg.input_size = 1;
        tickwire::set_bind_address(cfg, "127.0.0.1:0");
        // The matchmaker's job: one secret per match, given to both players. Encrypted, and a
        // stranger without it cannot complete a handshake. (SecurityConfig wipes its copy.)
        const tickwire::SecurityConfig match = tickwire::SecurityConfig::match(tickwire::generate_key());
        cfg.host.sim_seed = 42;
        Engine a("peer A", cfg, match);
        cfg.host.sim_seed = 43;
        Engine b("peer B", cfg, match);
        std::printf("p2p: encrypted; both peers share a match secret\n");
        tw_link_sim_config sim = tickwire::default_link_sim();
        sim.latency_us = 25000;
        sim.jitter_kind = TW_JITTER_KIND_UNIFORM;
        sim.jitter_us = 8000.0;
        sim.loss_kind = TW_LOSS_KIND_BERNOULLI;
        sim.loss_probability = 0.02;
        a.session.set_link_sim(TW_DIRECTION_OUTBOUND, sim);
        b.session.set_link_sim(TW_DIRECTION_OUTBOUND, sim);
        // Every peer lists the same players in the same order.
        a.session.add_local_player(0);
        a.session.set_player_input_delay(0, 1);  // GGPO's ggpo_set_frame_delay
        a.session.add_remote_player(1, b.session.local_address());
        b.session.add_remote_player(0, a.session.local_address());
        b.session.add_local_player(1);
        // A stall announced before start applies from the start; this one ends at once.
        b.session.set_loading(true);
        b.session.set_loading(false);
        // Peer A's log, through a std::function: connections, synchronization, and a
        // desync if there were one, printed from inside poll_event (frame() polls).
        int log_records = 0;
        a.session.set_log(
            [&log_records](tw_log_level level, std::string_view text) {
                ++log_records;
                std::printf("[peer A log %u] %.*s\n", static_cast<unsigned>(level), static_cast<int>(text.size()),
                            text.data());
            },
            TW_LOG_LEVEL_INFO);
        a.session.start();
        b.session.start();

        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
        while (std::chrono::steady_clock::now() < end && !a.failed && !b.failed) {
            frame(a, 0);  // two engines, one thread: each frame runs both
            frame(b, 1);
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }

        tw_session_stats sa, sb;
        a.session.stats(sa);
        b.session.stats(sb);
        const std::uint32_t confirmed = sa.confirmed_tick < sb.confirmed_tick ? sa.confirmed_tick : sb.confirmed_tick;
        std::uint32_t compared = 0, differ = 0;
        for (std::uint32_t t = confirmed > kHistory ? confirmed - static_cast<std::uint32_t>(kHistory) : 0; t < confirmed; ++t) {
            std::uint64_t ca = 0, cb = 0;
            if (a.sum_of(t, ca) && b.sum_of(t, cb)) {
                ++compared;
                differ += ca != cb;
            }
        }
        std::uint32_t peer = 0;
        tw_peer_stats ps{};
        const bool rtt = a.session.player_peer(1, peer) == TW_RESULT_OK && a.session.peer_stats(peer, ps) == TW_RESULT_OK;
        std::printf("p2p: confirmed by both %u, compared %u, different %u; rollbacks A %llu, B %llu; rtt %.1f ms\n",
                    static_cast<unsigned>(confirmed), static_cast<unsigned>(compared), static_cast<unsigned>(differ),
                    static_cast<unsigned long long>(sa.rollbacks), static_cast<unsigned long long>(sb.rollbacks),
                    rtt ? ps.srtt_us / 1000.0 : -1.0);
        const bool chatted = a.heard == "gg from player 1" && b.heard == "gg from player 0";
        if (a.failed || b.failed || compared < 30 || differ != 0 || !rtt || log_records < 3 || !chatted) {
            std::printf("cpp session example: FAILED\n");
            return 1;
        }
        // A net overlay's figures of the remote player (GGPO's ggpo_get_network_stats).
        tw_network_stats ns{};
        if (a.session.network_stats(1, ns) != TW_RESULT_OK || ns.peer != peer || ns.rtt_us <= 0.0) {
            std::printf("cpp session example: network_stats FAILED\n");
            return 1;
        }
        std::printf("p2p overlay of player 1: rtt %.1f ms, %.1f/%.1f kbps, advantage %.2f/%.2f, send queue %u, "
                    "recv queue %u, predicted %u\n",
                    ns.rtt_us / 1000.0, ns.kbps_sent, ns.kbps_received, static_cast<double>(ns.local_frame_advantage),
                    static_cast<double>(ns.remote_frame_advantage), static_cast<unsigned>(ns.send_queue),
                    static_cast<unsigned>(ns.recv_queue), static_cast<unsigned>(ns.predicted_ticks));
        // Timeouts after create, then dropping the peer on purpose (ggpo_disconnect_player).
        a.session.set_timeouts(10000, 500);
        a.session.set_loading(true);  // a loading screen mid-match, and its end
        a.session.set_loading(false);
        a.session.disconnect_player(1);
        try {
            a.session.disconnect_player(1);
            std::fprintf(stderr, "expected an error for a player already dropped\n");
            return 1;
        } catch (const tickwire::Error &e) {
            std::printf("as expected: %s\n", e.what());
            if (e.code() != TW_RESULT_INVALID_STATE) return 1;
        }

        // Moving a Session transfers ownership; the moved-from one holds nothing.
        tickwire::Session moved = std::move(b.session);
        if (b.session || !moved) {
            std::fprintf(stderr, "move did not transfer ownership\n");
            return 1;
        }
        // A relay client needs a server address it can reach: set_server throws on anything else.
        try {
            tickwire::Session client(tickwire::relay_client_config(kPlayers, 1, "127.0.0.1:0"));
            client.set_server("not an address");
            std::fprintf(stderr, "expected an error for a bad server address\n");
            return 1;
        } catch (const tickwire::Error &e) {
            std::printf("as expected: %s\n", e.what());
            if (e.code() != TW_RESULT_INVALID_ARGUMENT) return 1;
        }
        if (!relay_match(seconds)) {
            std::printf("cpp session example: relay match FAILED\n");
            return 1;
        }
        std::printf("cpp session example: ok\n");
        return 0;  // the destructors destroy both sessions
    } catch (const tickwire::Error &e) {
        std::fprintf(stderr, "cpp session example: %s\n", e.what());
        return 1;
    }
}
