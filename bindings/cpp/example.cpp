/*
 * tickwire C++ example: a relay server and two clients in one process over 127.0.0.1,
 * through tickwire.hpp. Each client sends its "input" every frame on the sequenced
 * channel and a hello on the reliable one; the server relays every input to the other
 * client. Every connection is encrypted, and the server admits only clients holding a
 * connect token: the example plays the game backend too (tickwire::generate_key for the
 * backend's key, tickwire::connect_token_generate for each client's token, and
 * tickwire::SecurityConfig for each host). Also shows the exception a setup call throws,
 * and the RAII cleanup.
 *
 *   cargo build
 *   ln -sf libtickwire.so target/debug/libtickwire.so.1   # its SONAME (the ABI version)
 *   c++ -std=c++17 -Wall -Wextra -Werror -Iinclude -Ibindings/cpp bindings/cpp/example.cpp \
 *       -Ltarget/debug -ltickwire -o build/cpp-example
 *   LD_LIBRARY_PATH=target/debug build/cpp-example
 *
 * Exit status 0 on success, 1 on failure. Every wait has a deadline.
 */
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tickwire.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDeadline = std::chrono::seconds(5);

struct Client {
    const char *name;
    tickwire::Host host;
    std::uint32_t server = 0;  // the peer id of the server, from connect
    bool connected = false;
    int relayed_inputs = 0;    // inputs of the other client, relayed by the server
    int reliable = 0;
};

// One frame of a client: send the input, flush, drain events.
bool client_frame(Client &c, std::uint32_t frame) {
    if (c.connected) {
        std::array<std::uint8_t, 8> input{};
        std::memcpy(input.data(), &frame, sizeof frame);
        tw_result r = c.host.send(c.server, TW_CHANNEL_SEQUENCED, input);
        if (TW_FAILED(r) && r != TW_RESULT_QUEUE_FULL) {
            std::fprintf(stderr, "%s: send: %s: %s\n", c.name, tickwire::result_name(r), tickwire::last_error_message().c_str());
            return false;
        }
    }
    c.host.flush();
    tw_event ev;
    while (c.host.poll_event(ev)) {
        switch (ev.kind) {
        case TW_EVENT_KIND_CONNECTED:
            std::printf("%s: connected to %.*s\n", c.name, static_cast<int>(tickwire::connected_address(ev).size()),
                        tickwire::connected_address(ev).data());
            c.connected = true;
            c.host.send(c.server, TW_CHANNEL_RELIABLE, std::string_view("hello from the client"));
            break;
        case TW_EVENT_KIND_MESSAGE: {
            std::array<std::uint8_t, 256> buf;
            std::size_t len = 0;
            if (TW_FAILED(c.host.read_message(buf, len))) {
                return false;
            }
            if (ev.data.message.channel == TW_CHANNEL_SEQUENCED) {
                c.relayed_inputs++;
            } else if (ev.data.message.channel == TW_CHANNEL_RELIABLE) {
                c.reliable++;
            }
            break;
        }
        case TW_EVENT_KIND_DISCONNECTED:
        case TW_EVENT_KIND_FATAL:
            std::fprintf(stderr, "%s: lost the server (event %u)\n", c.name, static_cast<unsigned>(ev.kind));
            return false;
        default:
            break;
        }
    }
    return true;
}

}  // namespace

/* A tw_log_fn: counts the records of the host it is set on. */
static void count_log(void *user, std::uint32_t, const char *, std::size_t) { ++*static_cast<int *>(user); }

int main() {
    try {
        // A setup call that fails throws tickwire::Error with the code and the message.
        try {
            tickwire::Host bad("not an address");
            std::fprintf(stderr, "expected an error for a bad bind address\n");
            return 1;
        } catch (const tickwire::Error &e) {
            std::printf("as expected: %s (code %d)\n", e.what(), static_cast<int>(e.code()));
            if (e.code() != TW_RESULT_INVALID_ARGUMENT) {
                return 1;
            }
        }

        // The backend: one key, shared with the servers and nobody else.
        const tickwire::key_bytes backend_key = tickwire::generate_key();
        // Tokens name the address clients reach the server at: on a real network its public
        // IP and port, given as public_address; left empty, as here, the address it is bound
        // to (127.0.0.1 and a free port), read back once it exists.
        tw_host_config server_config = tickwire::default_config();
        server_config.max_clients = 8;
        tickwire::Host server("127.0.0.1:0", server_config, tickwire::SecurityConfig::relay_server(backend_key, ""));
        const std::string address = server.local_address();
        std::printf("relay listening on %s\n", server.local_address().c_str());
        std::printf("relay: encrypted; clients admitted by connect token\n");
        // The log: a std::function, called from inside server.poll_event on this thread.
        int server_records = 0;
        server.set_log(
            [&server_records](tw_log_level level, std::string_view text) {
                ++server_records;
                std::printf("[relay log %u] %.*s\n", static_cast<unsigned>(level), static_cast<int>(text.size()),
                            text.data());
            },
            TW_LOG_LEVEL_INFO);

        // The backend mints each player a token for this server (sent over HTTPS in a game).
        const tw_host_config client_config = tickwire::default_config();
        auto client_host = [&](std::uint64_t player_id) {
            const tickwire::connect_token token =
                tickwire::connect_token_generate(backend_key, client_config.protocol_id, player_id, address, 300);
            return tickwire::Host("127.0.0.1:0", client_config, tickwire::SecurityConfig::relay_client(token));
        };
        std::vector<Client> clients;
        clients.push_back(Client{"alice", client_host(1)});
        clients.push_back(Client{"bob", client_host(2)});  // Host is moved into the vector
        // A plain C function and user pointer work too (here: counting alice's records).
        int alice_records = 0;
        if (clients[0].host.set_log(&count_log, &alice_records, TW_LOG_LEVEL_DEBUG) != TW_RESULT_OK) {
            std::fprintf(stderr, "set_log failed\n");
            return 1;
        }
        for (Client &c : clients) {
            c.server = c.host.connect(address);
        }

        std::vector<std::uint32_t> peers;  // the server's ids of its clients
        int hellos = 0;
        const auto deadline = Clock::now() + kDeadline;
        for (std::uint32_t frame = 0;; ++frame) {
            for (Client &c : clients) {
                if (!client_frame(c, frame)) {
                    return 1;
                }
            }
            // The relay: every input goes to every other client, same channel.
            server.flush();
            tw_event ev;
            while (server.poll_event(ev)) {
                if (ev.kind == TW_EVENT_KIND_CONNECTED) {
                    peers.push_back(ev.peer);
                } else if (ev.kind == TW_EVENT_KIND_MESSAGE) {
                    std::vector<std::uint8_t> payload = server.read_message();
                    if (ev.data.message.channel == TW_CHANNEL_RELIABLE) {
                        hellos++;
                        server.send(ev.peer, TW_CHANNEL_RELIABLE, std::string_view("welcome"));
                        continue;
                    }
                    for (std::uint32_t p : peers) {
                        if (p != ev.peer) {
                            server.send(p, ev.data.message.channel, payload);
                        }
                    }
                }
            }
            bool done = hellos == 2;
            for (const Client &c : clients) {
                done = done && c.relayed_inputs >= 10 && c.reliable == 1;
            }
            if (done) {
                break;
            }
            if (Clock::now() > deadline) {
                std::fprintf(stderr, "timed out: hellos %d, alice %d/%d, bob %d/%d\n", hellos, clients[0].relayed_inputs,
                             clients[0].reliable, clients[1].relayed_inputs, clients[1].reliable);
                return 1;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }

        for (Client &c : clients) {
            tw_peer_stats ps;
            if (TW_SUCCEEDED(c.host.peer_stats(c.server, ps))) {
                std::printf("%s: %d relayed inputs, rtt %.0f us, %llu packets received\n", c.name, c.relayed_inputs,
                            ps.srtt_us, static_cast<unsigned long long>(ps.packets_received));
            }
        }
        tw_host_stats hs;
        server.stats(hs);
        std::printf("relay: %llu datagrams in, %llu out, %llu connections\n",
                    static_cast<unsigned long long>(hs.datagrams_received),
                    static_cast<unsigned long long>(hs.datagrams_sent), static_cast<unsigned long long>(hs.connections));

        // Both logs heard the connections (the server's lambda, alice's C function).
        if (server_records < 3 || alice_records < 2) {
            std::fprintf(stderr, "log records: server %d, alice %d\n", server_records, alice_records);
            return 1;
        }
        std::printf("log: %d server records, %d of alice's\n", server_records, alice_records);

        // Moving a Host transfers ownership; the moved-from one holds nothing.
        tickwire::Host moved = std::move(clients[0].host);
        if (clients[0].host || !moved) {
            std::fprintf(stderr, "move did not transfer ownership\n");
            return 1;
        }
        std::printf("cpp example: ok\n");
        return 0;  // the destructors destroy every host
    } catch (const tickwire::Error &e) {
        std::fprintf(stderr, "cpp example: %s\n", e.what());
        return 1;
    }
}
