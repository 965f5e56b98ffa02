/*
 * tickwire.hpp: a header-only C++17 wrapper over the tickwire C API (tickwire.h).
 *
 *   tickwire::Host     owns one tw_host (move-only; the destructor calls tw_host_destroy)
 *   tickwire::Session  owns one tw_session (P2P, SYNCTEST, SPECTATOR, REPLAY, RELAY_SERVER,
 *                      RELAY_CLIENT; move-only; the destructor calls tw_session_destroy)
 *   tickwire::SecurityConfig   a tw_security_config by value (encryption, match and
 *                      spectator secrets, a relay server's connect key and public
 *                      address, a relay client's connect token), wiped when destroyed;
 *                      Host and Session take one at creation
 *   tickwire::generate_key, tickwire::connect_token_generate
 *                      a new 32-byte key from the OS; a connect token minted as a game
 *                      backend does (tw_generate_key, tw_connect_token_generate)
 *   tickwire::Error    std::runtime_error with the tw_result code and the library's
 *                      last-error message; thrown by setup calls only (create, connect,
 *                      players, set_server, start, recording, link simulator,
 *                      local_address, check_abi, keys and tokens)
 *   tickwire::LogHandler   std::function<void(tw_log_level, std::string_view)>: what
 *                      Host::set_log and Session::set_log call, from inside poll_event
 *                      on the polling thread (exceptions it throws are swallowed: none
 *                      may cross the C ABI); a plain tw_log_fn + user pointer works too
 *   bytes / mutable_bytes   pointer + size views for payloads and inputs (a small
 *                      std::span stand-in: built from containers of bytes, arrays,
 *                      string_view)
 *   datagrams / mutable_datagrams   the same for tw_datagram items: what an engine's
 *                      carrier (Steam, EOS, WebRTC) received, for push_datagrams, and
 *                      room for what to send, for pull_datagrams (a Host or Session
 *                      bound to "remote:<id>")
 *   tickwire::Rendezvous   owns one tw_rendezvous, the rendezvous and relay service of
 *                      P2P matches behind NATs, in this process (move-only; the
 *                      destructor calls tw_rendezvous_destroy)
 *   tickwire::match_claim_write, tickwire::rendezvous_ticket
 *                      the match claim a rendezvous ticket's user data starts with; a
 *                      ticket minted as a game backend does (a connect token with the
 *                      claim, for Session::set_rendezvous)
 *
 * Per-frame calls (Host: send, flush, poll_event, read_message, stats; Session:
 * ticks_due, push_input, advance, poll_request, read_inputs, confirm_save, poll_event,
 * send_message, read_message,
 * stats, request_snapshot, player_stats, player_identity, ...; both: push_datagrams and
 * pull_datagrams on an external carrier) are noexcept, return the tw_result (or a bool) and never allocate. The
 * threading rules are the C API's: a Host or Session is not safe for concurrent use;
 * serialize calls on it (the engine's main thread); a call made while another thread is
 * inside one gets TW_RESULT_BUSY (or an Error with it); its network thread never calls
 * your code.
 *
 * Link with -ltickwire (or CMake's tickwire::tickwire). Nothing here is compiled
 * into the library; the wrapper is inline code in your program.
 */
#ifndef TICKWIRE_HPP
#define TICKWIRE_HPP

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tickwire.h"

namespace tickwire {

/** This thread's last error message (tw_last_error_message); empty if none. */
inline std::string last_error_message() {
    char small[256];
    std::size_t needed = tw_last_error_message(small, sizeof small);
    if (needed == 0) {
        return std::string();
    }
    if (needed <= sizeof small) {
        return std::string(small, needed - 1);
    }
    std::string text(needed, '\0');
    needed = tw_last_error_message(&text[0], text.size());
    text.resize(needed > 0 ? needed - 1 : 0);
    return text;
}

/** The C name of a result code, for example "TW_RESULT_QUEUE_FULL". */
inline const char *result_name(tw_result r) noexcept { return tw_result_str(r); }

/**
 * A log handler: one record, its level and its text (valid only during the call; copy
 * it to keep it). Called only from inside poll_event, on the thread that polls.
 */
using LogHandler = std::function<void(tw_log_level, std::string_view)>;

namespace detail {
/** The tw_log_fn behind LogHandler: user is the handler, owned by the Host or Session. */
inline void log_trampoline(void *user, std::uint32_t level, const char *message, std::size_t len) noexcept {
    try {
        (*static_cast<LogHandler *>(user))(static_cast<tw_log_level>(level), std::string_view(message, len));
    } catch (...) {
        // An exception must not unwind through the C library: the record is lost, the
        // game goes on.
    }
}
}  // namespace detail

/** A failed setup call: the code and the library's message naming the function and the reason. */
class Error : public std::runtime_error {
public:
    Error(tw_result code, std::string native_message)
        : std::runtime_error(std::string(tw_result_str(code)) + ": " + native_message),
          code_(code),
          native_message_(std::move(native_message)) {}

    /** The error for a call that just failed on this thread. */
    static Error last(tw_result code) { return Error(code, last_error_message()); }

    /** The tw_result the call returned. */
    tw_result code() const noexcept { return code_; }
    /** The library's last-error message (names the function and the reason). */
    const std::string &native_message() const noexcept { return native_message_; }

private:
    tw_result code_;
    std::string native_message_;
};

namespace detail {

/** Throws Error::last(r) when r is an error (negative); statuses and OK pass. */
inline void throw_if_failed(tw_result r) {
    if (TW_FAILED(r)) {
        throw Error::last(r);
    }
}

/** The text of a fixed-size, NUL-padded char field of an event (a view into it). */
template <std::size_t N>
inline std::string_view field_text(const char (&field)[N]) noexcept {
    std::size_t n = 0;
    while (n < N && field[n] != '\0') {
        ++n;
    }
    return std::string_view(field, n);
}

}  // namespace detail

/**
 * Checks that the library matches the header this program was compiled with (the ABI
 * number and every struct size). Throws Error(TW_RESULT_VERSION_MISMATCH) if not: a
 * stale libtickwire on the library path is the usual cause. The Host and Session
 * constructors call it (once per process).
 */
inline void check_abi() {
    std::string diff;
    auto size = [&diff](const char *name, std::size_t lib, std::size_t ours) {
        if (lib != ours) {
            diff += std::string(diff.empty() ? "" : "; ") + "sizeof(" + name + ") is " + std::to_string(lib) +
                    " in the library, " + std::to_string(ours) + " in the header";
        }
    };
    if (tw_abi_version() != TW_ABI_VERSION) {
        diff = "tw_abi_version() is " + std::to_string(tw_abi_version()) + ", the header says " +
               std::to_string(TW_ABI_VERSION);
    }
    size("tw_host_config", tw_host_config_size(), sizeof(tw_host_config));
    size("tw_link_sim_config", tw_link_sim_config_size(), sizeof(tw_link_sim_config));
    size("tw_event", tw_event_size(), sizeof(tw_event));
    size("tw_peer_stats", tw_peer_stats_size(), sizeof(tw_peer_stats));
    size("tw_host_stats", tw_host_stats_size(), sizeof(tw_host_stats));
    size("tw_session_config", tw_session_config_size(), sizeof(tw_session_config));
    size("tw_request", tw_request_size(), sizeof(tw_request));
    size("tw_session_event", tw_session_event_size(), sizeof(tw_session_event));
    size("tw_session_stats", tw_session_stats_size(), sizeof(tw_session_stats));
    size("tw_relay_player_stats", tw_relay_player_stats_size(), sizeof(tw_relay_player_stats));
    size("tw_security_config", tw_security_config_size(), sizeof(tw_security_config));
    size("tw_network_stats", tw_network_stats_size(), sizeof(tw_network_stats));
    size("tw_player_identity", tw_player_identity_size(), sizeof(tw_player_identity));
    size("tw_rendezvous_stats", tw_rendezvous_stats_size(), sizeof(tw_rendezvous_stats));
    if (!diff.empty()) {
        throw Error(TW_RESULT_VERSION_MISMATCH,
                    "the tickwire library does not match tickwire.h (" + diff + "); is a stale libtickwire on the library path?");
    }
}

/** check_abi, the first time only (a function-local static runs it once, thread-safely). */
inline void check_abi_once() {
    static const bool abi_ok = (check_abi(), true);
    (void)abi_ok;
}

/** A read-only view of payload bytes (pointer + size); the bytes are copied by send. */
class bytes {
public:
    constexpr bytes() noexcept = default;
    bytes(const void *data, std::size_t size) noexcept
        : data_(static_cast<const std::uint8_t *>(data)), size_(size) {}
    /** Text without a terminating NUL. */
    bytes(std::string_view text) noexcept : data_(reinterpret_cast<const std::uint8_t *>(text.data())), size_(text.size()) {}
    /** Any contiguous container of one-byte elements: std::vector<uint8_t>, std::array, std::string. */
    template <class C, class = std::enable_if_t<sizeof(*std::declval<const C &>().data()) == 1>>
    bytes(const C &c) noexcept : data_(reinterpret_cast<const std::uint8_t *>(c.data())), size_(c.size()) {}
    template <std::size_t N>
    constexpr bytes(const std::uint8_t (&array)[N]) noexcept : data_(array), size_(N) {}

    constexpr const std::uint8_t *data() const noexcept { return data_; }
    constexpr std::size_t size() const noexcept { return size_; }
    constexpr bool empty() const noexcept { return size_ == 0; }

private:
    const std::uint8_t *data_ = nullptr;
    std::size_t size_ = 0;
};

/** A writable view of a caller buffer (pointer + size), for read_message. */
class mutable_bytes {
public:
    constexpr mutable_bytes() noexcept = default;
    mutable_bytes(void *data, std::size_t size) noexcept : data_(static_cast<std::uint8_t *>(data)), size_(size) {}
    template <class C, class = std::enable_if_t<sizeof(*std::declval<C &>().data()) == 1 &&
                                                !std::is_const<std::remove_pointer_t<decltype(std::declval<C &>().data())>>::value>>
    mutable_bytes(C &c) noexcept : data_(reinterpret_cast<std::uint8_t *>(c.data())), size_(c.size()) {}
    template <std::size_t N>
    constexpr mutable_bytes(std::uint8_t (&array)[N]) noexcept : data_(array), size_(N) {}

    constexpr std::uint8_t *data() const noexcept { return data_; }
    constexpr std::size_t size() const noexcept { return size_; }

private:
    std::uint8_t *data_ = nullptr;
    std::size_t size_ = 0;
};

/**
 * A read-only view of tw_datagram items (pointer + count), for push_datagrams: built from
 * a pointer and a count, a std::vector<tw_datagram>, a std::array or a C array.
 */
class datagrams {
public:
    constexpr datagrams() noexcept = default;
    constexpr datagrams(const tw_datagram *items, std::size_t count) noexcept : data_(items), size_(count) {}
    template <class C, class = std::enable_if_t<std::is_same<std::remove_cv_t<std::remove_pointer_t<
                                                    decltype(std::declval<const C &>().data())>>,
                                                tw_datagram>::value>>
    datagrams(const C &c) noexcept : data_(c.data()), size_(c.size()) {}
    template <std::size_t N>
    constexpr datagrams(const tw_datagram (&array)[N]) noexcept : data_(array), size_(N) {}

    constexpr const tw_datagram *data() const noexcept { return data_; }
    constexpr std::size_t size() const noexcept { return size_; }
    constexpr bool empty() const noexcept { return size_ == 0; }
    constexpr const tw_datagram *begin() const noexcept { return data_; }
    constexpr const tw_datagram *end() const noexcept { return data_ + size_; }

private:
    const tw_datagram *data_ = nullptr;
    std::size_t size_ = 0;
};

/** A writable view of tw_datagram items (pointer + count), for pull_datagrams. */
class mutable_datagrams {
public:
    constexpr mutable_datagrams() noexcept = default;
    constexpr mutable_datagrams(tw_datagram *items, std::size_t count) noexcept : data_(items), size_(count) {}
    template <class C, class = std::enable_if_t<
                           std::is_same<std::remove_pointer_t<decltype(std::declval<C &>().data())>, tw_datagram>::value>>
    mutable_datagrams(C &c) noexcept : data_(c.data()), size_(c.size()) {}
    template <std::size_t N>
    constexpr mutable_datagrams(tw_datagram (&array)[N]) noexcept : data_(array), size_(N) {}

    constexpr tw_datagram *data() const noexcept { return data_; }
    constexpr std::size_t size() const noexcept { return size_; }

private:
    tw_datagram *data_ = nullptr;
    std::size_t size_ = 0;
};

/** The library's default host config (tw_host_config_init_default). Edit, then pass to Host. */
inline tw_host_config default_config() {
    tw_host_config c;
    detail::throw_if_failed(tw_host_config_init_default(&c));
    return c;
}

/** A perfect simulated link (tw_link_sim_config_init_default). Edit, then pass to set_link_sim. */
inline tw_link_sim_config default_link_sim() {
    tw_link_sim_config c;
    detail::throw_if_failed(tw_link_sim_config_init_default(&c));
    return c;
}

/** The peer address of a TW_EVENT_KIND_CONNECTED event (a view into the event). */
inline std::string_view connected_address(const tw_event &ev) noexcept {
    return detail::field_text(ev.data.connected.address);
}

/** The message of a TW_EVENT_KIND_FATAL event (a view into the event). */
inline std::string_view fatal_message(const tw_event &ev) noexcept { return detail::field_text(ev.data.fatal.message); }

/** A key: a match secret, a spectators' secret or a connect-token key (TW_KEY_SIZE bytes). */
using key_bytes = std::array<std::uint8_t, TW_KEY_SIZE>;

/** A connect token (TW_CONNECT_TOKEN_SIZE bytes), from connect_token_generate. */
using connect_token = std::array<std::uint8_t, TW_CONNECT_TOKEN_SIZE>;

namespace detail {

/** Zeroes n bytes at p through volatile writes, which the compiler may not drop. */
inline void wipe(void *p, std::size_t n) noexcept {
    volatile std::uint8_t *v = static_cast<volatile std::uint8_t *>(p);
    while (n--) {
        *v++ = 0;
    }
}

}  // namespace detail

/** A new key from the operating system's secure random generator (tw_generate_key). Throws Error. */
inline key_bytes generate_key() {
    key_bytes key{};
    detail::throw_if_failed(tw_generate_key(key.data(), key.size()));
    return key;
}

/**
 * Mints a connect token for one client, as a game backend does (tw_connect_token_generate):
 * key is the backend's and the servers' key (TW_KEY_SIZE bytes); protocol_id the game's
 * tw_host_config.protocol_id; client_id the player's id in the backend; server_addresses
 * 1 to TW_CONNECT_TOKEN_MAX_ADDRESSES comma-separated addresses ("203.0.113.7:7000,[::1]:7000");
 * expire_seconds how long from now it can be used to connect (>= 1; reconnects need a valid
 * token too); timeout_seconds the connection timeout both ends use (0: each end's own);
 * user_data up to TW_CONNECT_TOKEN_USER_DATA_SIZE bytes of game data. Hand the token to the
 * client over your own secure channel. Throws Error (TW_RESULT_INVALID_ARGUMENT naming the
 * argument; TW_RESULT_IO if the OS generator or clock failed).
 */
inline connect_token connect_token_generate(bytes key, std::uint32_t protocol_id, std::uint64_t client_id,
                                            const char *server_addresses, std::uint32_t expire_seconds,
                                            std::uint32_t timeout_seconds = 0, bytes user_data = bytes()) {
    connect_token token{};
    detail::throw_if_failed(tw_connect_token_generate(key.data(), key.size(), protocol_id, client_id, server_addresses,
                                                      expire_seconds, timeout_seconds, user_data.data(),
                                                      user_data.size(), token.data(), token.size()));
    return token;
}
/** As above, for a std::string. */
inline connect_token connect_token_generate(bytes key, std::uint32_t protocol_id, std::uint64_t client_id,
                                            const std::string &server_addresses, std::uint32_t expire_seconds,
                                            std::uint32_t timeout_seconds = 0, bytes user_data = bytes()) {
    return connect_token_generate(key, protocol_id, client_id, server_addresses.c_str(), expire_seconds,
                                  timeout_seconds, user_data);
}

/** The match claim a rendezvous ticket's user data starts with (TW_MATCH_CLAIM_SIZE bytes). */
using match_claim = std::array<std::uint8_t, TW_MATCH_CLAIM_SIZE>;

/**
 * The match claim of player slot (below players, 2..=8) in match match_id, the backend's
 * name for the match (tw_match_claim_write). Throws Error (TW_RESULT_INVALID_ARGUMENT).
 */
inline match_claim match_claim_write(std::uint64_t match_id, std::uint32_t slot, std::uint32_t players) {
    match_claim claim{};
    detail::throw_if_failed(tw_match_claim_write(match_id, slot, players, claim.data(), claim.size()));
    return claim;
}

/**
 * Mints a rendezvous ticket as a game backend does: a connect token made with the
 * rendezvous's key (TW_KEY_SIZE bytes) for the game's protocol_id, naming the
 * rendezvous's address, whose user data is the match claim of player slot of match_id
 * (players in all), then game_data (up to TW_CONNECT_TOKEN_USER_DATA_SIZE -
 * TW_MATCH_CLAIM_SIZE bytes of the game's own). client_id is the player's id in the
 * backend: one per slot. Hand it to the player over your own secure channel, with the
 * match's players' secret; the player passes it to Session::set_rendezvous. Throws Error.
 */
inline connect_token rendezvous_ticket(bytes key, std::uint32_t protocol_id, std::uint64_t client_id,
                                       const std::string &rendezvous_address, std::uint64_t match_id,
                                       std::uint32_t slot, std::uint32_t players, std::uint32_t expire_seconds,
                                       bytes game_data = bytes()) {
    const match_claim claim = match_claim_write(match_id, slot, players);
    std::vector<std::uint8_t> user_data(claim.begin(), claim.end());
    user_data.insert(user_data.end(), game_data.data(), game_data.data() + game_data.size());
    return connect_token_generate(key, protocol_id, client_id, rendezvous_address, expire_seconds, 0, user_data);
}

/** The name of a tw_path ("NONE", "DIRECT", "RELAYED"; "?" for another value). */
inline const char *path_name(std::uint32_t path) noexcept {
    switch (path) {
        case TW_PATH_NONE:
            return "NONE";
        case TW_PATH_DIRECT:
            return "DIRECT";
        case TW_PATH_RELAYED:
            return "RELAYED";
        default:
            return "?";
    }
}

/**
 * A rendezvous service in this process (tw_rendezvous): P2P peers behind NATs register
 * with it using tickets minted with its key (rendezvous_ticket), learn each other's
 * candidate addresses, and have their packets relayed (sealed end to end: it cannot read
 * them) until a direct path answers. Runs on a thread of its own. Unique ownership:
 * move-only; the destructor stops it (tw_rendezvous_destroy). A moved-from Rendezvous
 * holds nothing; calls on it return TW_RESULT_NULL_ARGUMENT (or throw).
 */
class Rendezvous {
public:
    /**
     * Starts the service on bind_address (IP and port; port 0 picks one; tickets must name
     * the address it is reached at) with the tickets' key (TW_KEY_SIZE bytes, copied) for
     * the game's protocol_id. Each match may relay relay_bytes_per_sec bytes a second (0:
     * 32768) for match_secs seconds from its first ticket (0: 7200). Throws Error
     * (TW_RESULT_INVALID_ARGUMENT, TW_RESULT_ADDRESS_IN_USE, TW_RESULT_IO).
     */
    Rendezvous(const char *bind_address, bytes key, std::uint32_t protocol_id, std::uint32_t relay_bytes_per_sec = 0,
               std::uint32_t match_secs = 0) {
        check_abi_once();
        detail::throw_if_failed(tw_rendezvous_create(bind_address, key.data(), key.size(), protocol_id,
                                                     relay_bytes_per_sec, match_secs, &rendezvous_));
    }
    Rendezvous(const std::string &bind_address, bytes key, std::uint32_t protocol_id,
               std::uint32_t relay_bytes_per_sec = 0, std::uint32_t match_secs = 0)
        : Rendezvous(bind_address.c_str(), key, protocol_id, relay_bytes_per_sec, match_secs) {}

    /** Takes ownership of a handle from tw_rendezvous_create. */
    static Rendezvous adopt(tw_rendezvous *raw) noexcept { return Rendezvous(raw); }

    ~Rendezvous() { reset(); }
    Rendezvous(Rendezvous &&other) noexcept : rendezvous_(std::exchange(other.rendezvous_, nullptr)) {}
    Rendezvous &operator=(Rendezvous &&other) noexcept {
        if (this != &other) {
            reset();
            rendezvous_ = std::exchange(other.rendezvous_, nullptr);
        }
        return *this;
    }
    Rendezvous(const Rendezvous &) = delete;
    Rendezvous &operator=(const Rendezvous &) = delete;

    /** The handle, for calls to the C API. Still owned by this Rendezvous. */
    tw_rendezvous *get() const noexcept { return rendezvous_; }
    /** Gives up ownership: the caller must tw_rendezvous_destroy the result. */
    tw_rendezvous *release() noexcept { return std::exchange(rendezvous_, nullptr); }
    /** Stops the service now (no-op if empty). */
    void reset() noexcept {
        tw_rendezvous_destroy(rendezvous_);
        rendezvous_ = nullptr;
    }
    explicit operator bool() const noexcept { return rendezvous_ != nullptr; }

    /** The bound address, with the real port ("127.0.0.1:40123"): what tickets name. Throws Error. */
    std::string local_address() const {
        char buf[64];
        std::size_t len = 0;
        detail::throw_if_failed(tw_rendezvous_local_address(rendezvous_, buf, sizeof buf, &len));
        return std::string(buf, len > 0 ? len - 1 : 0);
    }
    /** What the service has done (matches, members, tickets, relayed datagrams and bytes, drops); at most 100 ms old. */
    tw_result stats(tw_rendezvous_stats &out) noexcept { return tw_rendezvous_get_stats(rendezvous_, &out); }

private:
    explicit Rendezvous(tw_rendezvous *raw) noexcept : rendezvous_(raw) {}

    tw_rendezvous *rendezvous_ = nullptr;
};

/**
 * Security settings (a tw_security_config held by value), for Host and Session at
 * creation: the library copies them while the host or session is created. The
 * destructor wipes the keys and token it holds (a moved-from one is wiped too).
 *
 * - P2P: every peer uses the same match secret (SecurityConfig::match, from the
 *   matchmaker); a stranger without it cannot complete a handshake. A spectators' secret
 *   lets spectators in with their own (a SPECTATOR session sets only that).
 * - RELAY_SERVER: the backend's connect key and the address clients reach the server at
 *   (SecurityConfig::relay_server); only clients with a valid, unexpired connect token
 *   for that address get in, one connection per token (and per client id) at a time.
 *   The engine learns who each player is from the token: Session::player_identity.
 * - RELAY_CLIENT: the connect token the backend minted (SecurityConfig::relay_client).
 *
 * Without one, connections are still encrypted, and open to anyone. The setters throw
 * std::invalid_argument for a wrong length; the library checks the rest at creation
 * (Error, TW_RESULT_INVALID_ARGUMENT naming the tw_security_config field): among them an
 * all-zero secret or key, and a spectators' secret equal to the match secret.
 */
class SecurityConfig {
public:
    /** The defaults (tw_security_config_init_default): encrypted, no secret, key or token. */
    SecurityConfig() {
        check_abi_once();  // the init call writes the library's sizeof: it must be ours
        detail::throw_if_failed(tw_security_config_init_default(&config_));
    }
    ~SecurityConfig() { detail::wipe(&config_, sizeof config_); }
    SecurityConfig(const SecurityConfig &) = default;
    SecurityConfig &operator=(const SecurityConfig &) = default;
    SecurityConfig(SecurityConfig &&other) noexcept : config_(other.config_) { other.reset(); }
    SecurityConfig &operator=(SecurityConfig &&other) noexcept {
        if (this != &other) {
            config_ = other.config_;
            other.reset();
        }
        return *this;
    }

    /** A P2P peer: the match's secret (TW_KEY_SIZE bytes), the same on every peer. */
    static SecurityConfig match(bytes match_secret) {
        SecurityConfig s;
        s.set_match_secret(match_secret);
        return s;
    }
    /** A SPECTATOR session: the spectators' secret the P2P peers were given. */
    static SecurityConfig spectator(bytes spectator_secret) {
        SecurityConfig s;
        s.set_spectator_secret(spectator_secret);
        return s;
    }
    /** A relay server admitting only connect-token holders: the backend's key and the address clients use. */
    static SecurityConfig relay_server(bytes connect_key, std::string_view public_address) {
        SecurityConfig s;
        s.set_connect_key(connect_key, public_address);
        return s;
    }
    /** A relay client: the connect token from the backend. */
    static SecurityConfig relay_client(bytes token) {
        SecurityConfig s;
        s.set_connect_token(token);
        return s;
    }
    /** No encryption or authentication (benchmarks, debugging); both ends must choose it. */
    static SecurityConfig insecure_plaintext() {
        SecurityConfig s;
        s.set_mode(TW_SECURITY_MODE_INSECURE_PLAINTEXT);
        return s;
    }

    /** TW_SECURITY_MODE_ENCRYPTED (the default) or TW_SECURITY_MODE_INSECURE_PLAINTEXT. */
    SecurityConfig &set_mode(tw_security_mode mode) noexcept {
        config_.mode = static_cast<std::uint32_t>(mode);
        return *this;
    }
    /** P2P: the match's secret (TW_KEY_SIZE bytes, copied). */
    SecurityConfig &set_match_secret(bytes secret) {
        copy_exact(secret, config_.match_secret, "a match secret");
        config_.has_match_secret = 1;
        return *this;
    }
    SecurityConfig &clear_match_secret() noexcept {
        detail::wipe(config_.match_secret, sizeof config_.match_secret);
        config_.has_match_secret = 0;
        return *this;
    }
    /** The spectators' secret (TW_KEY_SIZE bytes, copied): P2P peers admit it; a SPECTATOR shows it. */
    SecurityConfig &set_spectator_secret(bytes secret) {
        copy_exact(secret, config_.spectator_secret, "a spectators' secret");
        config_.has_spectator_secret = 1;
        return *this;
    }
    SecurityConfig &clear_spectator_secret() noexcept {
        detail::wipe(config_.spectator_secret, sizeof config_.spectator_secret);
        config_.has_spectator_secret = 0;
        return *this;
    }
    /**
     * Admit only holders of a connect token made with key (TW_KEY_SIZE bytes, copied) for
     * public_address, the address clients reach this host at ("203.0.113.7:7000", at most
     * 63 bytes; empty: the bind address, which must then be a specific IP and port).
     */
    SecurityConfig &set_connect_key(bytes key, std::string_view public_address) {
        if (public_address.size() >= sizeof config_.public_address) {
            throw std::invalid_argument("a public address has at most 63 bytes");
        }
        copy_exact(key, config_.connect_key, "a connect key");
        std::fill(std::begin(config_.public_address), std::end(config_.public_address), '\0');
        std::copy(public_address.begin(), public_address.end(), config_.public_address);
        config_.has_connect_key = 1;
        return *this;
    }
    SecurityConfig &clear_connect_key() noexcept {
        detail::wipe(config_.connect_key, sizeof config_.connect_key);
        detail::wipe(config_.public_address, sizeof config_.public_address);
        config_.has_connect_key = 0;
        return *this;
    }
    /** RELAY_CLIENT: the connect token to show (TW_CONNECT_TOKEN_SIZE bytes, copied). */
    SecurityConfig &set_connect_token(bytes token) {
        copy_exact(token, config_.connect_token, "a connect token");
        config_.connect_token_size = TW_CONNECT_TOKEN_SIZE;
        return *this;
    }
    SecurityConfig &clear_connect_token() noexcept {
        detail::wipe(config_.connect_token, sizeof config_.connect_token);
        config_.connect_token_size = 0;
        return *this;
    }

    /** The struct, for the C API. */
    const tw_security_config &get() const noexcept { return config_; }
    tw_security_config &get() noexcept { return config_; }

    /**
     * Points config.security at this object, for a tw_host_create call of your own: this
     * object must outlive that call. (Host and Session take a SecurityConfig directly.)
     */
    void attach(tw_host_config &config) const noexcept { config.security = &config_; }
    /** Points config.host.security at this object; it must outlive the tw_session_create call. */
    void attach(tw_session_config &config) const noexcept { config.host.security = &config_; }

private:
    template <std::size_t N>
    static void copy_exact(bytes from, std::uint8_t (&to)[N], const char *what) {
        if (from.size() != N) {
            throw std::invalid_argument(std::string(what) + " is " + std::to_string(N) + " bytes, got " +
                                        std::to_string(from.size()));
        }
        std::copy(from.data(), from.data() + N, to);
    }

    /** Back to the defaults, the secrets wiped (what a move leaves behind). */
    void reset() noexcept {
        const std::uint32_t size = config_.struct_size;
        detail::wipe(&config_, sizeof config_);
        config_.struct_size = size;
        config_.mode = TW_SECURITY_MODE_ENCRYPTED;
    }

    tw_security_config config_;
};

/**
 * One tickwire host: a UDP socket, its network thread and its connections. Unique
 * ownership: move-only; the destructor destroys the host (joining the network thread,
 * at most 1 second). A moved-from Host holds nothing; calls on it return
 * TW_RESULT_NULL_ARGUMENT (or throw, for setup calls).
 */
class Host {
public:
    /**
     * Binds to bind_address ("0.0.0.0:7777", "127.0.0.1:0", "[::]:0"; "" or nullptr: the
     * automatic dual-stack bind) and starts the network thread.
     */
    explicit Host(const char *bind_address, const tw_host_config &config = default_config()) {
        check_abi_once();
        detail::throw_if_failed(tw_host_create(&config, bind_address, &host_));
    }
    explicit Host(const std::string &bind_address, const tw_host_config &config = default_config())
        : Host(bind_address.c_str(), config) {}
    /**
     * As above, with security settings (a match secret, a connect key and public address,
     * a connect token, or insecure plaintext): config.security points at them during the
     * create call only; the host keeps its own copy. Throws Error for a bad setting.
     */
    Host(const char *bind_address, tw_host_config config, const SecurityConfig &security) {
        check_abi_once();
        security.attach(config);
        detail::throw_if_failed(tw_host_create(&config, bind_address, &host_));
    }
    Host(const std::string &bind_address, const tw_host_config &config, const SecurityConfig &security)
        : Host(bind_address.c_str(), config, security) {}

    /** Takes ownership of a handle from tw_host_create. */
    static Host adopt(tw_host *raw) noexcept { return Host(raw); }

    ~Host() { reset(); }
    Host(Host &&other) noexcept : host_(std::exchange(other.host_, nullptr)), log_(std::move(other.log_)) {}
    Host &operator=(Host &&other) noexcept {
        if (this != &other) {
            reset();
            host_ = std::exchange(other.host_, nullptr);
            log_ = std::move(other.log_);
        }
        return *this;
    }
    Host(const Host &) = delete;
    Host &operator=(const Host &) = delete;

    /** The handle, for calls to the C API. Still owned by this Host. */
    tw_host *get() const noexcept { return host_; }
    /** Gives up ownership: the caller must tw_host_destroy the result. */
    tw_host *release() noexcept { return std::exchange(host_, nullptr); }
    /** Destroys the host now (no-op if empty), then its log handler. */
    void reset() noexcept {
        tw_host_destroy(host_);
        host_ = nullptr;
        log_.reset();
    }
    explicit operator bool() const noexcept { return host_ != nullptr; }

    /**
     * Starts connecting ("127.0.0.1:7777", "[::1]:7777", "localhost:7777": names are looked
     * up off this thread); returns the peer id. A CONNECTED or DISCONNECTED event follows
     * (reason TW_DISCONNECT_REASON_RESOLVE_FAILED for a name without an address).
     */
    std::uint32_t connect(const char *address) {
        std::uint32_t peer = 0;
        detail::throw_if_failed(tw_host_connect(host_, address, &peer));
        return peer;
    }
    std::uint32_t connect(const std::string &address) { return connect(address.c_str()); }

    /** Queues a message (copied now; leaves with the next flush). */
    tw_result send(std::uint32_t peer, std::uint32_t channel, bytes payload) noexcept {
        return tw_host_send(host_, peer, channel, payload.data(), payload.size());
    }
    tw_result send(std::uint32_t peer, std::uint32_t channel, const void *data, std::size_t len) noexcept {
        return tw_host_send(host_, peer, channel, static_cast<const std::uint8_t *>(data), len);
    }

    /** Sends everything queued; once per frame, after the sends. */
    tw_result flush() noexcept { return tw_host_flush(host_); }

    /** TW_RESULT_OK (event written), TW_RESULT_EMPTY (none now) or an error. */
    tw_result poll(tw_event &ev) noexcept { return tw_host_poll_event(host_, &ev); }
    /** True when an event was written; drain it in a loop every frame. */
    bool poll_event(tw_event &ev) noexcept { return poll(ev) == TW_RESULT_OK; }

    /**
     * Copies the payload of the MESSAGE event just polled. TW_RESULT_BUFFER_TOO_SMALL
     * sets out_len to the size needed and keeps the payload for another try.
     */
    tw_result read_message(mutable_bytes buffer, std::size_t &out_len) noexcept {
        return tw_host_read_message(host_, buffer.data(), buffer.size(), &out_len);
    }
    /** Allocating convenience: the payload of the MESSAGE event just polled. Throws on error. */
    std::vector<std::uint8_t> read_message() {
        std::size_t len = 0;
        tw_result r = tw_host_read_message(host_, nullptr, 0, &len);
        if (r == TW_RESULT_OK) {
            return std::vector<std::uint8_t>();
        }
        if (r != TW_RESULT_BUFFER_TOO_SMALL) {
            throw Error::last(r);
        }
        std::vector<std::uint8_t> out(len);
        r = tw_host_read_message(host_, out.data(), out.size(), &len);
        detail::throw_if_failed(r);
        return out;
    }

    /** Closes the connection to peer; a DISCONNECTED event follows. Does not block. */
    tw_result disconnect(std::uint32_t peer) noexcept { return tw_host_disconnect(host_, peer); }
    /** The connection's figures (RTT, loss, bytes): a snapshot at most a few tens of ms old. */
    tw_result peer_stats(std::uint32_t peer, tw_peer_stats &out) noexcept { return tw_host_peer_stats(host_, peer, &out); }
    /** Host-wide figures. */
    tw_result stats(tw_host_stats &out) noexcept { return tw_host_get_stats(host_, &out); }

    // --- an external carrier (a host bound to "remote:<id>") -------------------------------

    /**
     * Hands the host the datagrams its carrier (Steam, EOS, WebRTC) received: each item's
     * remote (where it came from), data and len (read during this call only) and age_us
     * (tw_host_push_datagrams). out_taken: how many were handed over. Each frame, before
     * polling events. TW_RESULT_INVALID_STATE on a host with a UDP socket.
     */
    tw_result push_datagrams(datagrams items, std::size_t &out_taken) noexcept {
        return tw_host_push_datagrams(host_, items.data(), items.size(), &out_taken);
    }
    tw_result push_datagrams(datagrams items) noexcept {
        return tw_host_push_datagrams(host_, items.data(), items.size(), nullptr);
    }
    /**
     * Takes what the host has for its carrier to send, oldest first (tw_host_pull_datagrams):
     * at most items.size(), the bytes packed into buffer (offer TW_MAX_DATAGRAM_SIZE per
     * item), each item's data pointing into it. out_count: how many were written. After
     * flush, until it gives fewer than items.size(). TW_RESULT_BUFFER_TOO_SMALL when the
     * next datagram does not fit buffer (nothing written).
     */
    tw_result pull_datagrams(mutable_datagrams items, mutable_bytes buffer, std::size_t &out_count) noexcept {
        return tw_host_pull_datagrams(host_, items.data(), items.size(), buffer.data(), buffer.size(), &out_count);
    }

    /** Turns the link simulator of one direction on (tests, development). Throws on a bad config. */
    void set_link_sim(tw_direction direction, const tw_link_sim_config &config) {
        detail::throw_if_failed(tw_host_set_link_sim(host_, direction, &config));
    }
    /** Turns the link simulator of one direction off. */
    void clear_link_sim(tw_direction direction) {
        detail::throw_if_failed(tw_host_set_link_sim(host_, direction, nullptr));
    }

    /** The bound address, with the real port ("127.0.0.1:40123"). */
    std::string local_address() const {
        char buf[64];
        std::size_t len = 0;
        detail::throw_if_failed(tw_host_local_address(host_, buf, sizeof buf, &len));
        return std::string(buf, len > 0 ? len - 1 : 0);
    }

    /**
     * Logs through handler, records at min_level and above (tw_host_set_log), called
     * from inside poll_event on the polling thread; the Host keeps the handler (moves
     * with it). An empty handler or TW_LOG_LEVEL_OFF turns the log off. Throws Error.
     */
    void set_log(LogHandler handler, tw_log_level min_level = TW_LOG_LEVEL_INFO) {
        if (!handler || min_level == TW_LOG_LEVEL_OFF) {
            detail::throw_if_failed(tw_host_set_log(host_, nullptr, nullptr, TW_LOG_LEVEL_OFF));
            log_.reset();
            return;
        }
        auto next = std::make_unique<LogHandler>(std::move(handler));
        detail::throw_if_failed(tw_host_set_log(host_, &detail::log_trampoline, next.get(), min_level));
        log_ = std::move(next);
    }
    /** A plain C log function and its user pointer (NULL: off); see tw_host_set_log. */
    tw_result set_log(tw_log_fn fn, void *user, tw_log_level min_level) noexcept {
        tw_result r = tw_host_set_log(host_, fn, user, min_level);
        if (r == TW_RESULT_OK) log_.reset();
        return r;
    }

private:
    explicit Host(tw_host *raw) noexcept : host_(raw) {}
    tw_host *host_ = nullptr;
    /** The handler set_log passed as the user pointer; freed after the host. */
    std::unique_ptr<LogHandler> log_;
};

/**
 * The library's default session config (tw_session_config_init_default) for a mode:
 * 2 players, 2-byte inputs, 60 Hz, bound to "0.0.0.0:0". Edit, then pass to Session.
 */
inline tw_session_config default_session_config(tw_session_mode mode = TW_SESSION_MODE_P2P) {
    tw_session_config c;
    detail::throw_if_failed(tw_session_config_init_default(&c));
    c.mode = mode;
    return c;
}

/** Sets a config's bind address ("0.0.0.0:7000"); throws std::invalid_argument if it does not fit. */
inline void set_bind_address(tw_session_config &config, std::string_view address) {
    if (address.size() >= sizeof config.bind_address) {
        throw std::invalid_argument("a bind address has at most 63 bytes");
    }
    std::fill(std::begin(config.bind_address), std::end(config.bind_address), '\0');
    std::copy(address.begin(), address.end(), config.bind_address);
}

/**
 * A relay server's config: the library's defaults with num_players player slots of
 * input_size-byte inputs, bound to bind_address ("0.0.0.0:7777"). Its clients use the
 * same num_players, input_size, tick_rate_hz and server_send_interval.
 */
inline tw_session_config relay_server_config(std::uint32_t num_players, std::uint32_t input_size,
                                             std::string_view bind_address) {
    tw_session_config c = default_session_config(TW_SESSION_MODE_RELAY_SERVER);
    c.num_players = num_players;
    c.input_size = input_size;
    set_bind_address(c, bind_address);
    return c;
}

/**
 * A relay client's config: the library's defaults with num_players player slots of
 * input_size-byte inputs (the server's), bound to bind_address. Name the server with
 * Session::set_server before start; raise max_prediction for round trips beyond about
 * 60 ms at 60 Hz.
 */
inline tw_session_config relay_client_config(std::uint32_t num_players, std::uint32_t input_size,
                                             std::string_view bind_address = "0.0.0.0:0") {
    tw_session_config c = default_session_config(TW_SESSION_MODE_RELAY_CLIENT);
    c.num_players = num_players;
    c.input_size = input_size;
    set_bind_address(c, bind_address);
    return c;
}

/** The message of a TW_SESSION_EVENT_KIND_FATAL event (a view into the event). */
inline std::string_view fatal_message(const tw_session_event &ev) noexcept {
    return detail::field_text(ev.data.fatal.message);
}

/** Where a TW_SESSION_EVENT_KIND_PATH_CHANGED event's path goes (the peer's or the relay's address; a view into the event). */
inline std::string_view path_address(const tw_session_event &ev) noexcept {
    return detail::field_text(ev.data.path.address);
}

/** Where a remote player's datagrams go now (tw_network_stats.path_address; a view into the figures). */
inline std::string_view path_address(const tw_network_stats &stats) noexcept {
    return detail::field_text(stats.path_address);
}

/**
 * One tickwire session: a rollback core (P2P, SYNCTEST, SPECTATOR, REPLAY) or a relay
 * core (RELAY_SERVER, RELAY_CLIENT) and, for P2P, SPECTATOR and the relay modes, a
 * socket with its network thread. The engine owns the game state and
 * answers the requests (SAVE, LOAD, ADVANCE, RESTORE, DUMP_STATE). Unique ownership:
 * move-only; the destructor destroys the session (joining the network thread, at most
 * 1 second). A moved-from Session holds nothing; calls on it return
 * TW_RESULT_NULL_ARGUMENT (or throw, for setup calls).
 *
 * The engine loop, once per frame:
 *
 *     std::uint32_t due = 0;
 *     session.ticks_due(due);
 *     while (due--) {
 *         session.push_input(me, input);              // relay client: TW_LOCAL_PLAYER; server: none
 *         session.advance();                          // OK or a status (TW_RESULT_WINDOW_FULL, ...)
 *         tw_request r;
 *         while (session.poll_request(r)) { ... }     // SAVE / LOAD / ADVANCE / ..., in order
 *     }
 *     tw_session_event e;
 *     while (session.poll_event(e)) { ... }
 */
class Session {
public:
    /** Creates the session (P2P, SPECTATOR and the relay modes bind their socket now). Throws Error. */
    explicit Session(const tw_session_config &config) {
        check_abi_once();
        detail::throw_if_failed(tw_session_create(&config, &session_));
    }
    /**
     * As above, with security settings (P2P: the match secret; SPECTATOR: the spectators'
     * secret; RELAY_SERVER: the connect key and public address; RELAY_CLIENT: the connect
     * token): config.host.security points at them during the create call only; the session
     * keeps its own copy. Throws Error for a bad setting.
     */
    Session(tw_session_config config, const SecurityConfig &security) {
        check_abi_once();
        security.attach(config);
        detail::throw_if_failed(tw_session_create(&config, &session_));
    }

    /** Takes ownership of a handle from tw_session_create. */
    static Session adopt(tw_session *raw) noexcept { return Session(raw); }

    ~Session() { reset(); }
    Session(Session &&other) noexcept
        : session_(std::exchange(other.session_, nullptr)), log_(std::move(other.log_)) {}
    Session &operator=(Session &&other) noexcept {
        if (this != &other) {
            reset();
            session_ = std::exchange(other.session_, nullptr);
            log_ = std::move(other.log_);
        }
        return *this;
    }
    Session(const Session &) = delete;
    Session &operator=(const Session &) = delete;

    /** The handle, for calls to the C API. Still owned by this Session. */
    tw_session *get() const noexcept { return session_; }
    /** Gives up ownership: the caller must tw_session_destroy the result. */
    tw_session *release() noexcept { return std::exchange(session_, nullptr); }
    /** Destroys the session now (no-op if empty), then its log handler. */
    void reset() noexcept {
        tw_session_destroy(session_);
        session_ = nullptr;
        log_.reset();
    }
    explicit operator bool() const noexcept { return session_ != nullptr; }

    // --- setup: throws Error ---------------------------------------------------------------

    /** P2P, before start: player plays on this machine. */
    void add_local_player(std::uint32_t player) { check(tw_session_add_local_player(session_, player)); }
    /** P2P, before start: player plays on the peer at address ("192.0.2.7:7000", "peer.lan:7000"). */
    void add_remote_player(std::uint32_t player, const char *address) {
        check(tw_session_add_remote_player(session_, player, address));
    }
    /** As above, for a std::string. */
    void add_remote_player(std::uint32_t player, const std::string &address) { add_remote_player(player, address.c_str()); }
    /**
     * P2P, before start: meet the other peers through the rendezvous at address with this
     * player's ticket (TW_CONNECT_TOKEN_SIZE bytes: rendezvous_ticket), instead of at
     * addresses given; flags TW_RENDEZVOUS_PRIVATE relays everything (nobody learns this
     * side's address). Needs the players' secret (SecurityConfig::match) and exactly one
     * local player, the ticket's slot; then add each remote player with
     * add_rendezvous_player. PATH_CHANGED events report each path (RELAYED, then DIRECT
     * when a direct path answers), network_stats the path now.
     */
    void set_rendezvous(const char *address, bytes ticket, std::uint32_t flags = 0) {
        check(tw_session_set_rendezvous(session_, address, ticket.data(), ticket.size(), flags));
    }
    /** As above, for a std::string. */
    void set_rendezvous(const std::string &address, bytes ticket, std::uint32_t flags = 0) {
        set_rendezvous(address.c_str(), ticket, flags);
    }
    /** P2P with a rendezvous, before start: player plays on a peer met through it (one player per peer). */
    void add_rendezvous_player(std::uint32_t player) { check(tw_session_add_remote_player(session_, player, nullptr)); }
    /** P2P, any time: accept a spectator connecting from address. */
    void add_spectator(const char *address) { check(tw_session_add_spectator(session_, address)); }
    /** As above, for a std::string. */
    void add_spectator(const std::string &address) { add_spectator(address.c_str()); }
    /** SPECTATOR, before start: the P2P peer whose match to watch. */
    void spectate(const char *address) { check(tw_session_spectate(session_, address)); }
    /** As above, for a std::string. */
    void spectate(const std::string &address) { spectate(address.c_str()); }
    /** RELAY_CLIENT, before start: the relay server to join ("192.0.2.7:7777", "relay.example.com:7777"). */
    void set_server(const char *address) { check(tw_session_set_server(session_, address)); }
    /** As above, for a std::string. */
    void set_server(const std::string &address) { set_server(address.c_str()); }
    /** REPLAY, before start: the replay to play (the bytes of a replay file, copied). */
    void load_replay(bytes replay) { check(tw_session_load_replay(session_, replay.data(), replay.size())); }
    /** REPLAY, before start: reads the replay file at path. */
    void load_replay_file(const char *path) { check(tw_session_load_replay_file(session_, path)); }
    /** P2P, SPECTATOR and the relay modes: the link simulator of one direction (tests, development). */
    void set_link_sim(tw_direction direction, const tw_link_sim_config &config) {
        check(tw_session_set_link_sim(session_, direction, &config));
    }
    /** Turns the link simulator of one direction off. */
    void clear_link_sim(tw_direction direction) { check(tw_session_set_link_sim(session_, direction, nullptr)); }
    /**
     * Ends setup: P2P connects (PEER_CONNECTED, then SYNCHRONIZED); SYNCTEST and REPLAY run at
     * once; RELAY_SERVER accepts clients (PLAYER_JOINED); RELAY_CLIENT connects (JOINED with
     * the snapshot, then SYNCHRONIZED once caught up).
     */
    void start() { check(tw_session_start(session_)); }
    /** P2P, before the first tick: record the match from initial_state (may be empty). */
    void start_recording(bytes initial_state) {
        check(tw_session_start_recording(session_, initial_state.data(), initial_state.size()));
    }
    /** P2P: every local player's input delay in ticks (0..=32) from the next tick on. */
    void set_input_delay(std::uint32_t ticks) { check(tw_session_set_input_delay(session_, ticks)); }
    /** P2P: local player's own input delay (0..=32), as GGPO's ggpo_set_frame_delay. */
    void set_player_input_delay(std::uint32_t player, std::uint32_t ticks) {
        check(tw_session_set_player_input_delay(session_, player, ticks));
    }
    /** P2P: the input to predict for player while its real one has not arrived (input_size bytes). */
    void set_prediction(std::uint32_t player, bytes input) {
        static const std::uint8_t none = 0;  // an empty view stays a (wrong-length) input, not "clear"
        check(tw_session_set_prediction(session_, player, input.data() ? input.data() : &none, input.size()));
    }
    /** P2P: back to the configured prediction for player. */
    void clear_prediction(std::uint32_t player) { check(tw_session_set_prediction(session_, player, nullptr, 0)); }
    /**
     * P2P: drops remote player (with every player of its peer) on purpose, like GGPO's
     * ggpo_disconnect_player; PEER_DISCONNECTED follows on both sides. Once SYNCHRONIZED.
     */
    void disconnect_player(std::uint32_t player) { check(tw_session_disconnect_player(session_, player)); }
    /**
     * RELAY_SERVER: removes player for good; its client sees SERVER_LOST (KICKED_BY_ENGINE)
     * with reason_code, the server PLAYER_KICKED.
     */
    void kick_player(std::uint32_t player, std::uint32_t reason_code) {
        check(tw_session_kick_player(session_, player, reason_code));
    }
    /** P2P: the silence timeouts from now on (0 = never), as the tw_session_config fields. */
    void set_timeouts(std::uint32_t disconnect_timeout_ms, std::uint32_t disconnect_notify_ms) {
        check(tw_session_set_timeouts(session_, disconnect_timeout_ms, disconnect_notify_ms));
    }
    /**
     * P2P: announces (true) or ends (false) a stall of this side's engine, such as a loading
     * screen mid-match: the peers do not count its held-back inputs as no progress
     * (tw_session_config.progress_timeout_ms) until their loading_grace_ms for it is spent.
     * While loading, keep calling ticks_due (and poll_event) each frame without advancing. Any
     * time; before start it applies from the start. Throws INVALID_STATE in another mode.
     */
    void set_loading(bool loading) { check(tw_session_set_loading(session_, loading ? 1u : 0u)); }

    /** P2P, SPECTATOR and the relay modes: the bound address, with the real port ("127.0.0.1:40123"). */
    std::string local_address() const {
        char buf[64];
        std::size_t len = 0;
        check(tw_session_local_address(session_, buf, sizeof buf, &len));
        return std::string(buf, len > 0 ? len - 1 : 0);
    }
    /** How many snapshots the engine holds: SAVE, LOAD and DUMP_STATE name slots below it. */
    std::uint32_t state_slots() const {
        std::uint32_t n = 0;
        check(tw_session_state_slots(session_, &n));
        return n;
    }

    // --- the engine loop: noexcept, tw_result --------------------------------------------

    /** Pumps the network; out = ticks to simulate now. Once per frame, also when 0 are due. */
    tw_result ticks_due(std::uint32_t &out) noexcept { return tw_session_ticks_due(session_, &out); }
    /** player's input (input_size bytes, copied) for the next advance. */
    tw_result push_input(std::uint32_t player, bytes input) noexcept {
        return tw_session_push_input(session_, player, input.data(), input.size());
    }
    /** One tick as requests: OK, or a status (NOT_SYNCHRONIZED, WINDOW_FULL, WAITING_FOR_INPUT, FINISHED). */
    tw_result advance() noexcept { return tw_session_advance(session_); }
    /** TW_RESULT_OK (request written), TW_RESULT_EMPTY (none left) or an error. */
    tw_result poll(tw_request &r) noexcept { return tw_session_poll_request(session_, &r); }
    /** True when a request was written; run each before polling the next. */
    bool poll_request(tw_request &r) noexcept { return poll(r) == TW_RESULT_OK; }
    /** ADVANCE: the inputs, num_players * input_size bytes, player 0 first. */
    tw_result read_inputs(mutable_bytes buffer, std::size_t &out_len) noexcept {
        return tw_session_request_inputs(session_, buffer.data(), buffer.size(), &out_len);
    }
    /** ADVANCE: one tw_input_status byte per player. */
    tw_result read_input_status(mutable_bytes buffer, std::size_t &out_len) noexcept {
        return tw_session_request_input_status(session_, buffer.data(), buffer.size(), &out_len);
    }
    /** RESTORE: the serialized state (data_len bytes). */
    tw_result read_state(mutable_bytes buffer, std::size_t &out_len) noexcept {
        return tw_session_request_state(session_, buffer.data(), buffer.size(), &out_len);
    }
    /** SAVE: the checksum of the state saved for tick. */
    tw_result confirm_save(std::uint32_t tick, std::uint64_t checksum) noexcept {
        return tw_session_confirm_save(session_, tick, checksum);
    }
    /** DUMP_STATE: the serialized state of tick (copied). */
    tw_result provide_state(std::uint32_t tick, bytes state) noexcept {
        return tw_session_provide_state(session_, tick, state.data(), state.size());
    }
    /** TW_RESULT_OK (event written), TW_RESULT_EMPTY (none now) or an error. */
    tw_result poll(tw_session_event &ev) noexcept { return tw_session_poll_event(session_, &ev); }
    /** True when an event was written; drain it every frame. */
    bool poll_event(tw_session_event &ev) noexcept { return poll(ev) == TW_RESULT_OK; }
    /** The session's figures (ticks, rollbacks, checks, bytes; a relay client's net graph). */
    tw_result stats(tw_session_stats &out) noexcept { return tw_session_get_stats(session_, &out); }
    /** The transport figures (RTT, loss, bytes) of connection peer (from an event or player_peer). */
    tw_result peer_stats(std::uint32_t peer, tw_peer_stats &out) noexcept {
        return tw_session_peer_stats(session_, peer, &out);
    }
    /**
     * P2P: the net-overlay figures of remote player (RTT, loss, kbps, frame advantage both
     * ways, input queues; with a rendezvous, its path and where it goes: path_address), as
     * GGPO's ggpo_get_network_stats. TW_RESULT_EMPTY while its peer is not connected (out
     * untouched).
     */
    tw_result network_stats(std::uint32_t player, tw_network_stats &out) noexcept {
        return tw_session_network_stats(session_, player, &out);
    }
    /** P2P: the connection of remote player (0 for a local one). RELAY_SERVER: a connected player's. */
    tw_result player_peer(std::uint32_t player, std::uint32_t &out_peer) noexcept {
        return tw_session_player_peer(session_, player, &out_peer);
    }
    /**
     * RELAY_CLIENT: drops the predicted timeline and asks the server for a new snapshot (after
     * a DESYNC): RESYNCING, then JOINED with a RESTORE request. TW_RESULT_INVALID_STATE in
     * another mode, before start or before it joined.
     */
    tw_result request_snapshot() noexcept { return tw_session_request_snapshot(session_); }
    /**
     * RELAY_SERVER: the figures of player (jitter buffer, late and empty steps, round trip).
     * TW_RESULT_EMPTY when the slot has no connected player (out untouched).
     */
    tw_result player_stats(std::uint32_t player, tw_relay_player_stats &out) noexcept {
        return tw_session_player_stats(session_, player, &out);
    }
    /**
     * RELAY_SERVER: what the connection of player proved (tw_session_player_identity): for a
     * client admitted by a connect token, credential TW_CREDENTIAL_CONNECT_TOKEN and the
     * token's client_id and user_data (zero-padded to 256 bytes) as the backend minted them;
     * else the class of the secret it proved. PLAYER_JOINED carries the credential and the
     * client id too (ev.data.relay). TW_RESULT_EMPTY when the slot is free (out untouched).
     */
    tw_result player_identity(std::uint32_t player, tw_player_identity &out) noexcept {
        return tw_session_player_identity(session_, player, &out);
    }

    // --- the message side channel (chat, settings, loadouts) ---------------------------------

    /**
     * P2P, RELAY_SERVER, RELAY_CLIENT: sends data (at most TW_SESSION_MESSAGE_MAX_SIZE bytes)
     * on the session's reliable side channel; it arrives as a MESSAGE event. target: a
     * player (P2P: a remote one's peer; RELAY_SERVER: a connected player's client) or
     * TW_SESSION_MESSAGE_TARGET_ALL (a relay client's only target: the server).
     * TW_RESULT_QUEUE_FULL: nothing was sent, try again on a later frame.
     */
    tw_result send_message(std::uint32_t target, bytes data) noexcept {
        return tw_session_send_message(session_, target, data.data(), data.size());
    }
    /**
     * Copies the payload of the MESSAGE event just polled (before polling again: the next
     * poll releases it). TW_RESULT_BUFFER_TOO_SMALL sets out_len to the size needed and
     * keeps the payload for another try; TW_SESSION_MESSAGE_MAX_SIZE bytes always fit.
     */
    tw_result read_message(mutable_bytes buffer, std::size_t &out_len) noexcept {
        return tw_session_read_message(session_, buffer.data(), buffer.size(), &out_len);
    }
    /** Allocating convenience: the payload of the MESSAGE event just polled. Throws on error. */
    std::vector<std::uint8_t> read_message() {
        std::size_t len = 0;
        tw_result r = tw_session_read_message(session_, nullptr, 0, &len);
        if (r == TW_RESULT_OK) {
            return std::vector<std::uint8_t>();
        }
        if (r != TW_RESULT_BUFFER_TOO_SMALL) {
            throw Error::last(r);
        }
        std::vector<std::uint8_t> out(len);
        check(tw_session_read_message(session_, out.data(), out.size(), &len));
        return out;
    }
    /** The side channel's figures: sent, received, dropped on arrival (unread flood, strangers). */
    tw_result message_stats(tw_session_message_stats &out) noexcept {
        return tw_session_get_message_stats(session_, &out);
    }

    // --- an external carrier (P2P, SPECTATOR or a relay mode bound to "remote:<id>") -------

    /**
     * Hands the session's host the datagrams its carrier (Steam, EOS, WebRTC) received: each
     * item's remote (where it came from), data and len (read during this call only) and
     * age_us (tw_session_push_datagrams). out_taken: how many were handed over. Each frame,
     * before ticks_due. TW_RESULT_INVALID_STATE on a UDP session, SYNCTEST or REPLAY.
     */
    tw_result push_datagrams(datagrams items, std::size_t &out_taken) noexcept {
        return tw_session_push_datagrams(session_, items.data(), items.size(), &out_taken);
    }
    tw_result push_datagrams(datagrams items) noexcept {
        return tw_session_push_datagrams(session_, items.data(), items.size(), nullptr);
    }
    /**
     * Takes what the session's host has for the carrier to send, oldest first
     * (tw_session_pull_datagrams): at most items.size(), the bytes packed into buffer (offer
     * TW_MAX_DATAGRAM_SIZE per item), each item's data pointing into it. out_count: how many
     * were written. After advance (which flushes), until it gives fewer than items.size().
     * TW_RESULT_BUFFER_TOO_SMALL when the next datagram does not fit buffer (nothing written).
     */
    tw_result pull_datagrams(mutable_datagrams items, mutable_bytes buffer, std::size_t &out_count) noexcept {
        return tw_session_pull_datagrams(session_, items.data(), items.size(), buffer.data(), buffer.size(), &out_count);
    }

    // --- desync dumps and replays ------------------------------------------------------------

    /** P2P: copies and releases the ready desync dump; TW_RESULT_EMPTY if none. */
    tw_result take_desync_dump(mutable_bytes buffer, std::size_t &out_len) noexcept {
        return tw_session_take_desync_dump(session_, buffer.data(), buffer.size(), &out_len);
    }
    /** Allocating convenience: the ready desync dump, released; empty if none. Throws on error. */
    std::vector<std::uint8_t> take_desync_dump() { return copy_all(&tw_session_take_desync_dump); }
    /** P2P: writes and releases the ready desync dump; false if none was ready. Throws on error. */
    bool write_desync_dump(const char *path) {
        tw_result r = tw_session_write_desync_dump(session_, path);
        check(r);
        return r == TW_RESULT_OK;
    }
    /**
     * SYNCTEST: copies and releases state which (TW_SYNCTEST_STATE_SAVED or _RESIMULATED) of the
     * captured mismatch, after SYNCTEST_STATES_READY; TW_RESULT_EMPTY if none (or taken).
     */
    tw_result take_synctest_state(std::uint32_t which, mutable_bytes buffer, std::size_t &out_len) noexcept {
        return tw_session_take_synctest_state(session_, which, buffer.data(), buffer.size(), &out_len);
    }
    /** Allocating convenience: state which of the captured mismatch, released; empty if none. Throws on error. */
    std::vector<std::uint8_t> take_synctest_state(std::uint32_t which) {
        return copy_all([which](tw_session *s, void *buf, std::size_t len, std::size_t *out) {
            return tw_session_take_synctest_state(s, which, buf, len, out);
        });
    }
    /** P2P: copies the replay recorded so far. */
    tw_result copy_replay(mutable_bytes buffer, std::size_t &out_len) noexcept {
        return tw_session_copy_replay(session_, buffer.data(), buffer.size(), &out_len);
    }
    /** Allocating convenience: the replay recorded so far. Throws on error. */
    std::vector<std::uint8_t> copy_replay() { return copy_all(&tw_session_copy_replay); }
    /** P2P: writes the replay recorded so far to path. Throws on error. */
    void save_replay(const char *path) { check(tw_session_save_replay(session_, path)); }

    /**
     * Logs through handler, records at min_level and above (tw_session_set_log), called
     * from inside poll_event on the polling thread; the Session keeps the handler
     * (moves with it). An empty handler or TW_LOG_LEVEL_OFF turns the log off. Throws
     * Error.
     */
    void set_log(LogHandler handler, tw_log_level min_level = TW_LOG_LEVEL_INFO) {
        if (!handler || min_level == TW_LOG_LEVEL_OFF) {
            check(tw_session_set_log(session_, nullptr, nullptr, TW_LOG_LEVEL_OFF));
            log_.reset();
            return;
        }
        auto next = std::make_unique<LogHandler>(std::move(handler));
        check(tw_session_set_log(session_, &detail::log_trampoline, next.get(), min_level));
        log_ = std::move(next);
    }
    /** A plain C log function and its user pointer (NULL: off); see tw_session_set_log. */
    tw_result set_log(tw_log_fn fn, void *user, tw_log_level min_level) noexcept {
        tw_result r = tw_session_set_log(session_, fn, user, min_level);
        if (r == TW_RESULT_OK) log_.reset();
        return r;
    }

private:
    explicit Session(tw_session *raw) noexcept : session_(raw) {}

    static void check(tw_result r) { detail::throw_if_failed(r); }

    /** Asks for the size, then copies; empty on TW_RESULT_EMPTY. copy is a function (or lambda) of
     * (tw_session *, void *buf, size_t len, size_t *out_len) with the buffer contract. */
    template <class CopyFn>
    std::vector<std::uint8_t> copy_all(CopyFn copy) {
        std::size_t len = 0;
        tw_result r = copy(session_, nullptr, 0, &len);
        std::vector<std::uint8_t> out;
        while (r == TW_RESULT_BUFFER_TOO_SMALL) {
            out.resize(len);
            r = copy(session_, out.data(), out.size(), &len);
        }
        check(r);
        out.resize(r == TW_RESULT_OK ? len : 0);
        return out;
    }

    tw_session *session_ = nullptr;
    /** The handler set_log passed as the user pointer; freed after the session. */
    std::unique_ptr<LogHandler> log_;
};

}  // namespace tickwire

#endif  // TICKWIRE_HPP
