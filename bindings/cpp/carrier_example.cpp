/*
 * tickwire C++ carrier example, through tickwire.hpp: two P2P peers whose datagrams the
 * engine moves itself, as a game does over Steam networking, EOS P2P or WebRTC data
 * channels. Each session is bound to "remote:<id>" (its id on the carrier: here two
 * SteamID-like numbers) and names its peer "remote:<id>"; it has no socket. Every frame
 * each engine pulls what its session has to send (Session::pull_datagrams, into a buffer
 * of its own) and the in-memory carrier below delivers it to the other one
 * (Session::push_datagrams) -- losing some (seeded) and holding others back a frame or
 * two (jitter: they arrive late and out of order). The peers play a small game for a
 * few seconds and must agree on the checksum of every tick both have confirmed.
 *
 * Then a relay match on the same carrier: a server (remote:10) and two predicting
 * clients (remote:11, remote:12); each client's authoritative checksums must equal the
 * server's, and each must have predicted and corrected (resimulated ticks).
 *
 *   cargo build
 *   ln -sf libtickwire.so target/debug/libtickwire.so.1   # its SONAME (the ABI version)
 *   c++ -std=c++17 -Wall -Wextra -Werror -Iinclude -Ibindings/cpp bindings/cpp/carrier_example.cpp \
 *       -Ltarget/debug -ltickwire -o build/cpp-carrier-example
 *   LD_LIBRARY_PATH=target/debug build/cpp-carrier-example [seconds]
 *
 * Exit status 0 on success, 1 on failure.
 */
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tickwire.hpp"

namespace {

constexpr std::uint32_t kPlayers = 2;
constexpr std::size_t kHistory = 4096;  // ticks of checksums kept per peer
constexpr std::size_t kBatch = 16;      // datagrams per pull: a frame's worth is usually fewer

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

// One peer: its id on the carrier, its session, its game and snapshots, and the
// checksum of each tick it saved.
struct Peer {
    const char *name;
    std::uint64_t id;
    tickwire::Session session;
    Game game;
    std::vector<Game> slots;
    std::array<std::uint32_t, kHistory> saved_tick{};  // tick + 1; 0 = none
    std::array<std::uint64_t, kHistory> saved_sum{};
    bool failed = false;
    bool connected = false;
    std::uint64_t advances = 0;
    // A relay server records the state after every ADVANCE (it saves only now and then).
    bool server = false;
    bool client = false;
    bool joined = false;
    std::uint32_t join_tick = 0, pushed = 0;

    Peer(const char *n, std::uint64_t remote_id, const tw_session_config &config)
        : name(n), id(remote_id), session(config), slots(session.state_slots()) {}

    void fail(const char *what, tw_result r) {
        std::fprintf(stderr, "%s: %s: %s: %s\n", name, what, tickwire::result_name(r), tickwire::last_error_message().c_str());
        failed = true;
    }

    void run_requests() {
        tw_request r;
        while (session.poll_request(r)) {
            if (r.kind == TW_REQUEST_KIND_SAVE) {
                slots[r.slot] = game;
                if (!server) remember(r.tick, game.checksum());
                if (tw_result c = session.confirm_save(r.tick, game.checksum()); TW_FAILED(c)) fail("confirm_save", c);
            } else if (r.kind == TW_REQUEST_KIND_LOAD) {
                game = slots[r.slot];
            } else if (r.kind == TW_REQUEST_KIND_ADVANCE) {
                std::array<std::uint8_t, kPlayers> in{};
                std::size_t n = 0;
                if (tw_result c = session.read_inputs(in, n); TW_FAILED(c)) {
                    fail("read_inputs", c);
                } else {
                    game.step(in.data());
                    if (server) remember(r.tick + 1, game.checksum());
                }
            } else if (r.kind == TW_REQUEST_KIND_RESTORE) {  // a relay client's join snapshot
                std::size_t n = 0;
                if (tw_result c = session.read_state(tickwire::mutable_bytes(&game, sizeof(Game)), n); TW_FAILED(c)) {
                    fail("read_state", c);
                }
            } else if (r.kind == TW_REQUEST_KIND_DUMP_STATE) {
                session.provide_state(r.tick, tickwire::bytes(&slots[r.slot], sizeof(Game)));
            }
        }
    }

    void remember(std::uint32_t tick, std::uint64_t sum) {  // the last one of a tick wins
        saved_tick[tick % kHistory] = tick + 1;
        saved_sum[tick % kHistory] = sum;
    }

    // One engine frame: the ticks due, each with this player's input (a relay client's
    // as TW_LOCAL_PLAYER, the server none); then the events.
    void frame(std::uint32_t me) {
        std::uint32_t due = 0;
        if (tw_result r = session.ticks_due(due); TW_FAILED(r)) {
            fail("ticks_due", r);
            return;
        }
        while (due--) {
            if (client) {
                const std::uint8_t in = input_at(me, pushed++);
                if (tw_result r = session.push_input(TW_LOCAL_PLAYER, tickwire::bytes(&in, 1)); TW_FAILED(r)) fail("push_input", r);
            } else if (!server) {
                tw_session_stats st;
                session.stats(st);
                const std::uint8_t in = input_at(me, st.current_tick + st.input_delay);
                if (tw_result r = session.push_input(me, tickwire::bytes(&in, 1)); TW_FAILED(r)) fail("push_input", r);
            }
            if (tw_result r = session.advance(); TW_FAILED(r)) fail("advance", r);  // statuses are not errors
            ++advances;
            run_requests();
        }
        tw_session_event ev;
        while (session.poll_event(ev)) {
            if (ev.kind == TW_SESSION_EVENT_KIND_PEER_CONNECTED) {
                std::printf("%s: peer connected\n", name);
                connected = true;
            } else if (ev.kind == TW_SESSION_EVENT_KIND_JOINED) {
                joined = true;
                join_tick = ev.data.relay.tick;
            } else if (ev.kind == TW_SESSION_EVENT_KIND_SERVER_LOST) {
                std::fprintf(stderr, "%s: lost the server\n", name);
                failed = true;
            } else if (ev.kind == TW_SESSION_EVENT_KIND_DESYNC) {
                std::fprintf(stderr, "%s: DESYNC at tick %u\n", name, static_cast<unsigned>(ev.data.desync.tick));
                failed = true;
            } else if (ev.kind == TW_SESSION_EVENT_KIND_PEER_DISCONNECTED || ev.kind == TW_SESSION_EVENT_KIND_FATAL) {
                std::fprintf(stderr, "%s: event %u\n", name, static_cast<unsigned>(ev.kind));
                failed = true;
            }
        }
    }
};

// The carrier: what is in flight between the peers, delivered after a delay of 0-2 frames,
// or lost. A real game calls its platform here (SteamNetworkingMessages, EOS_P2P_*).
class MemoryCarrier {
public:
    MemoryCarrier(std::uint64_t seed, double loss, double hold) : rng_(seed), loss_(loss), hold_(hold) {}

    // Takes everything `from` has to send: pulls until a pull gives fewer than it had room for.
    void collect(Peer &from) {
        for (;;) {
            std::size_t n = 0;
            if (tw_result r = from.session.pull_datagrams(items_, buffer_, n); TW_FAILED(r)) {
                from.fail("pull_datagrams", r);
                return;
            }
            for (std::size_t i = 0; i < n; ++i) {
                const tw_datagram &d = items_[i];
                largest_ = std::max<std::size_t>(largest_, d.len);
                ++sent_;
                if (unit_(rng_) < loss_) {
                    ++lost_;
                    continue;
                }
                std::uint64_t delay = 0;
                if (unit_(rng_) < hold_) {
                    delay = unit_(rng_) < 0.5 ? 1 : 2;
                    ++held_;
                }
                // The item's data points into buffer_, which the next pull overwrites: copy.
                flight_.push_back(InFlight{from.id, d.remote, frame_ + delay, std::vector<std::uint8_t>(d.data, d.data + d.len)});
            }
            if (n < items_.size()) return;
        }
    }

    // Hands `to` every datagram due for it this frame, in one push.
    void deliver(Peer &to) {
        std::vector<tw_datagram> batch;
        std::vector<InFlight> later;
        for (InFlight &f : flight_) {
            if (f.to == to.id && f.due <= frame_) {
                batch.push_back(tw_datagram{f.from, f.bytes.data(), static_cast<std::uint32_t>(f.bytes.size()), 0});
            }
        }
        std::size_t taken = 0;
        if (tw_result r = to.session.push_datagrams(batch, taken); TW_FAILED(r) || taken != batch.size()) {
            to.fail("push_datagrams", r);
        }
        delivered_ += batch.size();
        // The pushed bytes were read during the call: now they may go.
        for (InFlight &f : flight_) {
            if (!(f.to == to.id && f.due <= frame_)) later.push_back(std::move(f));
        }
        flight_.swap(later);
    }

    void next_frame() { ++frame_; }

    std::size_t largest_ = 0, sent_ = 0, lost_ = 0, held_ = 0, delivered_ = 0;

private:
    struct InFlight {
        std::uint64_t from, to, due;
        std::vector<std::uint8_t> bytes;
    };
    std::mt19937_64 rng_;
    std::uniform_real_distribution<double> unit_{0.0, 1.0};
    double loss_, hold_;
    std::uint64_t frame_ = 0;
    std::vector<InFlight> flight_;
    std::array<tw_datagram, kBatch> items_{};
    std::vector<std::uint8_t> buffer_ = std::vector<std::uint8_t>(kBatch * TW_MAX_DATAGRAM_SIZE);
};

// Compares `a`'s checksums with `b`'s over [from, to); returns how many ticks both have.
std::uint32_t compare(const Peer &a, const Peer &b, std::uint32_t from, std::uint32_t to, std::uint32_t &differ) {
    std::uint32_t compared = 0;
    differ = 0;
    if (to > kHistory && from < to - static_cast<std::uint32_t>(kHistory)) from = to - static_cast<std::uint32_t>(kHistory);
    for (std::uint32_t t = from; t < to; ++t) {
        if (a.saved_tick[t % kHistory] == t + 1 && b.saved_tick[t % kHistory] == t + 1) {
            ++compared;
            differ += a.saved_sum[t % kHistory] != b.saved_sum[t % kHistory];
        }
    }
    return compared;
}

tw_session_config carried_config(std::uint64_t id, tw_session_mode mode = TW_SESSION_MODE_P2P) {
    tw_session_config c = tickwire::default_session_config(mode);
    c.num_players = kPlayers;
    c.input_size = 1;
    tickwire::set_bind_address(c, "remote:" + std::to_string(id));
    c.host.max_datagram_size = 1200;  // Steam's unreliable messages; EOS P2P: 1170
    return c;
}

}  // namespace

int main(int argc, char **argv) {
    const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
    try {
        tickwire::check_abi();
        const std::uint64_t ida = 76561198000000011ull, idb = 76561198000000022ull;
        Peer a("peer A", ida, carried_config(ida));
        Peer b("peer B", idb, carried_config(idb));
        std::printf("peer A is %s, peer B is %s\n", a.session.local_address().c_str(), b.session.local_address().c_str());
        a.session.add_local_player(0);
        a.session.add_remote_player(1, b.session.local_address().c_str());
        b.session.add_remote_player(0, a.session.local_address().c_str());
        b.session.add_local_player(1);
        a.session.start();
        b.session.start();

        MemoryCarrier carrier(2024, 0.05, 0.2);
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
        // Each engine: what arrived, then its frame, then what to send.
        const auto both_frames = [&] {
            carrier.deliver(a);
            carrier.deliver(b);
            a.frame(0);
            b.frame(1);
            carrier.collect(a);
            carrier.collect(b);
            carrier.next_frame();
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        };
        while (std::chrono::steady_clock::now() < end && !a.failed && !b.failed) {
            both_frames();
        }

        // A UDP session has nothing to pull: INVALID_STATE, as a return value (per-frame calls never throw).
        {
            tw_session_config udp = tickwire::default_session_config(TW_SESSION_MODE_P2P);
            tickwire::set_bind_address(udp, "127.0.0.1:0");
            tickwire::Session s(udp);
            std::array<tw_datagram, 1> one{};
            std::array<std::uint8_t, TW_MAX_DATAGRAM_SIZE> buf{};
            std::size_t n = 0;
            if (s.pull_datagrams(one, buf, n) != TW_RESULT_INVALID_STATE) {
                std::fprintf(stderr, "a UDP session's pull should be INVALID_STATE\n");
                return 1;
            }
        }

        tw_session_stats sa, sb;
        a.session.stats(sa);
        b.session.stats(sb);
        const std::uint32_t confirmed = std::min(sa.confirmed_tick, sb.confirmed_tick);
        // A tick counts as confirmed once its inputs are, which can happen in a frame that
        // advances nothing; a tick simulated with a wrong prediction is simulated again at
        // the next advance. So each peer advances once more before the comparison.
        const std::uint64_t before_a = a.advances, before_b = b.advances;
        for (int f = 0; f < 500 && !a.failed && !b.failed && (a.advances == before_a || b.advances == before_b); ++f) {
            both_frames();
        }
        std::uint32_t differ = 0;
        const std::uint32_t compared = compare(a, b, 0, confirmed, differ);
        std::printf("carrier: %zu datagrams sent, %zu lost, %zu held back, %zu delivered, largest %zu bytes\n", carrier.sent_,
                    carrier.lost_, carrier.held_, carrier.delivered_, carrier.largest_);
        std::printf("p2p over the carrier: confirmed by both %u, compared %u, different %u; rollbacks A %llu, B %llu\n",
                    static_cast<unsigned>(confirmed), static_cast<unsigned>(compared), static_cast<unsigned>(differ),
                    static_cast<unsigned long long>(sa.rollbacks), static_cast<unsigned long long>(sb.rollbacks));
        if (a.failed || b.failed || !a.connected || !b.connected || compared < 30 || differ != 0 || carrier.lost_ == 0 ||
            carrier.held_ == 0 || carrier.largest_ > 1200) {
            std::printf("cpp carrier example: FAILED\n");
            return 1;
        }

        // The relay match on the same kind of carrier: the server admits anyone here (an
        // open, encrypted match); examples-c/carrier.c shows connect tokens naming a remote.
        Peer server("server", 10, carried_config(10, TW_SESSION_MODE_RELAY_SERVER));
        server.server = true;
        Peer c1("client 1", 11, carried_config(11, TW_SESSION_MODE_RELAY_CLIENT));
        Peer c2("client 2", 12, carried_config(12, TW_SESSION_MODE_RELAY_CLIENT));
        server.session.start();
        for (Peer *c : {&c1, &c2}) {
            c->client = true;
            c->session.set_server("remote:10");
            c->session.start();
        }
        MemoryCarrier relay_carrier(7, 0.03, 0.2);
        const auto relay_end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds + 2.0);
        while (std::chrono::steady_clock::now() < relay_end && !server.failed && !c1.failed && !c2.failed) {
            for (Peer *p : {&server, &c1, &c2}) relay_carrier.deliver(*p);
            server.frame(0);
            c1.frame(1);
            c2.frame(2);
            for (Peer *p : {&server, &c1, &c2}) relay_carrier.collect(*p);
            relay_carrier.next_frame();
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        bool relay_ok = !server.failed;
        for (Peer *c : {&c1, &c2}) {
            tw_session_stats st;
            c->session.stats(st);
            std::uint32_t relay_differ = 0;
            const std::uint32_t relay_compared = compare(*c, server, c->join_tick, st.confirmed_tick, relay_differ);
            std::printf("relay over the carrier: %s joined at %u, authoritative %u, compared %u, different %u, "
                        "resimulated %llu\n",
                        c->name, static_cast<unsigned>(c->join_tick), static_cast<unsigned>(st.confirmed_tick),
                        static_cast<unsigned>(relay_compared), static_cast<unsigned>(relay_differ),
                        static_cast<unsigned long long>(st.resimulated_ticks));
            relay_ok = relay_ok && !c->failed && c->joined && relay_compared >= 30 && relay_differ == 0 &&
                       st.resimulated_ticks > 0;
        }
        if (!relay_ok || relay_carrier.largest_ > 1200) {
            std::printf("cpp carrier example: relay FAILED\n");
            return 1;
        }
        std::printf("cpp carrier example: ok\n");
        return 0;
    } catch (const tickwire::Error &e) {
        std::fprintf(stderr, "cpp carrier example: %s\n", e.what());
        return 1;
    }
}
