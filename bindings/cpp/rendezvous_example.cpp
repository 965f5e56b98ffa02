/*
 * tickwire C++ rendezvous example, through tickwire.hpp: P2P peers that meet through a
 * rendezvous service instead of at addresses given, as peers behind NATs do. A
 * tickwire::Rendezvous runs in this process on 127.0.0.1; the "backend" mints each
 * player a ticket with its key (tickwire::rendezvous_ticket: a connect token whose user
 * data starts with the match claim); each peer sets it (Session::set_rendezvous), adds
 * the other player with no address (Session::add_rendezvous_player) and starts. The
 * rendezvous relays their packets at once (RELAYED) and the peers move to a direct path
 * when one answers (DIRECT). Two matches:
 *   1. open: both peers must end on DIRECT (loopback has no NAT);
 *   2. private (peer B sets TW_RENDEZVOUS_PRIVATE): both must stay RELAYED, and the
 *      rendezvous must have relayed datagrams.
 * In each, both peers must agree on the checksum of every tick both have confirmed, and
 * network_stats must name the path the last PATH_CHANGED event did.
 *
 *   cargo build
 *   ln -sf libtickwire.so target/debug/libtickwire.so.1   # its SONAME (the ABI version)
 *   c++ -std=c++17 -Wall -Wextra -Werror -Iinclude -Ibindings/cpp bindings/cpp/rendezvous_example.cpp \
 *       -Ltarget/debug -ltickwire -o build/cpp-rendezvous-example
 *   LD_LIBRARY_PATH=target/debug build/cpp-rendezvous-example [ticks]
 *
 * Exit status 0 on success, 1 on failure.
 */
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tickwire.hpp"

namespace {

constexpr std::uint32_t kPlayers = 2;
constexpr std::uint32_t kProtocolId = 0x74770052;  // the sessions', the tickets' and the rendezvous's
constexpr std::size_t kHistory = 1024;              // ticks of checksums kept per peer

// The game: a position per player, moved by one input byte each tick.
struct Game {
    std::array<std::int32_t, kPlayers> x{}, y{};

    std::uint64_t checksum() const {
        std::uint64_t h = 14695981039346656037ull;
        for (std::uint32_t p = 0; p < kPlayers; ++p) {
            h = (h ^ static_cast<std::uint32_t>(x[p])) * 1099511628211ull;
            h = (h ^ static_cast<std::uint32_t>(y[p])) * 1099511628211ull;
        }
        return h;
    }
    void step(const std::uint8_t *in) {
        for (std::uint32_t p = 0; p < kPlayers; ++p) {
            x[p] += ((in[p] >> 1) & 1) - (in[p] & 1);
            y[p] += ((in[p] >> 3) & 1) - ((in[p] >> 2) & 1);
        }
    }
};

std::uint8_t input_at(std::uint32_t player, std::uint32_t tick) {
    std::uint32_t v = (tick / 8) * 2654435761u ^ (player + 1) * 40503u;
    return static_cast<std::uint8_t>((v >> 13) & 0x0f);
}

tw_session_config peer_config() {
    tw_session_config c = tickwire::default_session_config(TW_SESSION_MODE_P2P);
    c.num_players = kPlayers;
    c.input_size = 1;
    c.host.protocol_id = kProtocolId;
    tickwire::set_bind_address(c, "127.0.0.1:0");
    return c;
}

// One peer of a match met through the rendezvous: its session, game, snapshots, the
// checksum of each tick it saved, and the other player's path as the events say.
struct Peer {
    const char *name;
    std::uint32_t me;
    tickwire::Session session;
    Game game;
    std::vector<Game> slots;
    std::array<std::uint32_t, kHistory> saved_tick{};  // tick + 1; 0 = none
    std::array<std::uint64_t, kHistory> saved_sum{};
    std::uint32_t settled = 0;  // the confirmed tick as of the last advance
    std::uint32_t path = TW_PATH_NONE;
    std::string path_address;
    bool failed = false;

    Peer(const char *n, std::uint32_t player, const tickwire::SecurityConfig &security, const std::string &rendezvous,
         const tickwire::connect_token &ticket, std::uint32_t flags)
        : name(n), me(player), session(peer_config(), security), slots(session.state_slots()) {
        session.set_rendezvous(rendezvous, ticket, flags);
        for (std::uint32_t p = 0; p < kPlayers; ++p) {  // the same order on every peer
            if (p == me) {
                session.add_local_player(p);
            } else {
                session.add_rendezvous_player(p);  // no address: met through the rendezvous
            }
        }
    }

    void fail(const char *what, tw_result r) {
        std::fprintf(stderr, "%s: %s: %s: %s\n", name, what, tickwire::result_name(r), tickwire::last_error_message().c_str());
        failed = true;
    }

    void frame(const char *match) {
        std::uint32_t due = 0;
        if (tw_result r = session.ticks_due(due); TW_FAILED(r)) {
            fail("ticks_due", r);
            return;
        }
        while (due--) {
            tw_session_stats st;
            session.stats(st);
            const std::uint8_t in = input_at(me, st.current_tick + st.input_delay);
            if (tw_result r = session.push_input(me, tickwire::bytes(&in, 1)); TW_FAILED(r)) fail("push_input", r);
            if (tw_result r = session.advance(); TW_FAILED(r)) fail("advance", r);  // statuses are not errors
            tw_request q;
            while (session.poll_request(q)) {
                if (q.kind == TW_REQUEST_KIND_SAVE) {
                    slots[q.slot] = game;
                    saved_tick[q.tick % kHistory] = q.tick + 1;
                    saved_sum[q.tick % kHistory] = game.checksum();
                    session.confirm_save(q.tick, game.checksum());
                } else if (q.kind == TW_REQUEST_KIND_LOAD) {
                    game = slots[q.slot];
                } else if (q.kind == TW_REQUEST_KIND_ADVANCE) {
                    std::array<std::uint8_t, kPlayers> inputs{};
                    std::size_t n = 0;
                    if (tw_result r = session.read_inputs(inputs, n); TW_FAILED(r)) fail("read_inputs", r);
                    else game.step(inputs.data());
                }
            }
            session.stats(st);
            settled = st.confirmed_tick;
        }
        tw_session_event ev;
        while (session.poll_event(ev)) {
            if (ev.kind == TW_SESSION_EVENT_KIND_PATH_CHANGED) {
                path = ev.data.path.path;
                path_address = std::string(tickwire::path_address(ev));
                std::printf("%s: %s: player %u's path: %s via %s\n", match, name, static_cast<unsigned>(ev.data.path.player),
                            tickwire::path_name(path), path_address.c_str());
            } else if (ev.kind == TW_SESSION_EVENT_KIND_RENDEZVOUS_REFUSED) {
                std::fprintf(stderr, "%s: %s: ticket refused (reason %u)\n", match, name,
                             static_cast<unsigned>(ev.data.refusal.reason));
                failed = true;
            } else if (ev.kind == TW_SESSION_EVENT_KIND_DESYNC || ev.kind == TW_SESSION_EVENT_KIND_PEER_DISCONNECTED ||
                       ev.kind == TW_SESSION_EVENT_KIND_FATAL) {
                std::fprintf(stderr, "%s: %s: event %u\n", match, name, static_cast<unsigned>(ev.kind));
                failed = true;
            }
        }
    }
};

// Plays one match until both peers confirmed `ticks` ticks on path `want`; true when it
// got there in sync, with network_stats agreeing.
bool play(const char *match, const tickwire::key_bytes &key, const std::string &rendezvous, std::uint64_t match_id,
          std::uint32_t b_flags, std::uint32_t want, std::uint32_t ticks) {
    // From the backend: the players' secret and one ticket per player.
    const tickwire::SecurityConfig security = tickwire::SecurityConfig::match(tickwire::generate_key());
    std::optional<Peer> a, b;
    try {
        a.emplace("peer A", 0, security, rendezvous,
                  tickwire::rendezvous_ticket(key, kProtocolId, 7000, rendezvous, match_id, 0, kPlayers, 600), 0);
        b.emplace("peer B", 1, security, rendezvous,
                  tickwire::rendezvous_ticket(key, kProtocolId, 7001, rendezvous, match_id, 1, kPlayers, 600), b_flags);
        a->session.start();
        b->session.start();
    } catch (const tickwire::Error &e) {
        std::fprintf(stderr, "%s: setup: %s\n", match, e.what());
        return false;
    }
    const auto start = std::chrono::steady_clock::now();
    bool there = false;
    while (!a->failed && !b->failed && std::chrono::steady_clock::now() - start < std::chrono::seconds(30)) {
        a->frame(match);
        b->frame(match);
        there = a->settled >= ticks && b->settled >= ticks && a->path == want && b->path == want;
        if (there) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    bool ok = there && !a->failed && !b->failed;
    for (Peer *p : {&*a, &*b}) {
        tw_network_stats ns{};
        if (tw_result r = p->session.network_stats(1 - p->me, ns); r != TW_RESULT_OK) {
            p->fail("network_stats", r);
            ok = false;
            continue;
        }
        std::printf("%s: %s's overlay: path %s via %.*s\n", match, p->name, tickwire::path_name(ns.path),
                    static_cast<int>(tickwire::path_address(ns).size()), tickwire::path_address(ns).data());
        ok = ok && ns.path == want && tickwire::path_address(ns) == p->path_address;
    }
    const std::uint32_t confirmed = std::min(a->settled, b->settled);
    std::uint32_t compared = 0, differ = 0;
    for (std::uint32_t t = confirmed > kHistory ? confirmed - kHistory : 0; t < confirmed; ++t) {
        const std::size_t i = t % kHistory;
        if (a->saved_tick[i] != t + 1 || b->saved_tick[i] != t + 1) continue;
        ++compared;
        differ += a->saved_sum[i] != b->saved_sum[i];
    }
    std::printf("%s: %u ticks confirmed by both, %u checksums compared, %u different\n", match, static_cast<unsigned>(confirmed),
                static_cast<unsigned>(compared), static_cast<unsigned>(differ));
    return ok && compared > 10 && differ == 0;
}

}  // namespace

int main(int argc, char **argv) {
    const std::uint32_t ticks = argc > 1 ? static_cast<std::uint32_t>(std::strtoul(argv[1], nullptr, 10)) : 120;
    try {
        const tickwire::key_bytes key = tickwire::generate_key();  // the tickets' key: backend and rendezvous
        tickwire::Rendezvous rendezvous("127.0.0.1:0", key, kProtocolId);
        const std::string address = rendezvous.local_address();
        std::printf("rendezvous on %s\n", address.c_str());
        const bool open = play("open match", key, address, 1, 0, TW_PATH_DIRECT, ticks);
        const bool private_ = play("private match", key, address, 2, TW_RENDEZVOUS_PRIVATE, TW_PATH_RELAYED, ticks);
        tw_rendezvous_stats st{};
        bool relayed = false;
        for (int i = 0; i < 100 && !relayed; ++i) {  // the figures are at most 100 ms old
            relayed = rendezvous.stats(st) == TW_RESULT_OK && st.matches_made == 2 && st.relayed_datagrams > 0;
            if (!relayed) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        std::printf("rendezvous: %llu matches made, %llu datagrams relayed, %llu refused\n",
                    static_cast<unsigned long long>(st.matches_made), static_cast<unsigned long long>(st.relayed_datagrams),
                    static_cast<unsigned long long>(st.refused));
        const bool ok = open && private_ && relayed && st.refused == 0;
        std::printf("%s\n", ok ? "rendezvous example: both matches in sync on the expected paths" : "rendezvous example: FAILED");
        return ok ? 0 : 1;
    } catch (const tickwire::Error &e) {
        std::fprintf(stderr, "rendezvous example: %s\n", e.what());
        return 1;
    }
}
