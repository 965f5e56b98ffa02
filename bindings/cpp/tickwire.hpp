/*
 * tickwire.hpp: a header-only C++17 wrapper over the tickwire C API (tickwire.h).
 *
 *   tickwire::Host   owns one tw_host (move-only; the destructor calls tw_host_destroy)
 *   tickwire::Error  std::runtime_error with the tw_result code and the library's
 *                    last-error message; thrown by setup calls only (create, connect,
 *                    link simulator, local_address, check_abi)
 *   bytes / mutable_bytes   pointer + size views for payloads (a small std::span
 *                    stand-in: built from containers of bytes, arrays, string_view)
 *
 * Per-frame calls (send, flush, poll_event, read_message, stats) are noexcept, return
 * the tw_result (or a bool) and never allocate. The threading rules are the C API's:
 * a Host is not safe for concurrent use; serialize calls on it (the engine's main
 * thread); its network thread never calls your code.
 *
 * Link with -ltickwire (or CMake's tickwire::tickwire). Nothing here is compiled
 * into the library; the wrapper is inline code in your program.
 */
#ifndef TICKWIRE_HPP
#define TICKWIRE_HPP

#include <cstddef>
#include <cstdint>
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

/** A failed setup call: the code and the library's message naming the function and the reason. */
class Error : public std::runtime_error {
public:
    Error(tw_result code, std::string native_message)
        : std::runtime_error(std::string(tw_result_str(code)) + ": " + native_message),
          code_(code),
          native_message_(std::move(native_message)) {}

    /** The error for a call that just failed on this thread. */
    static Error last(tw_result code) { return Error(code, last_error_message()); }

    tw_result code() const noexcept { return code_; }
    const std::string &native_message() const noexcept { return native_message_; }

private:
    tw_result code_;
    std::string native_message_;
};

/**
 * Checks that the library matches the header this program was compiled with (the ABI
 * number and every struct size). Throws Error(TW_RESULT_VERSION_MISMATCH) if not: a
 * stale libtickwire on the library path is the usual cause. Host's constructor calls it.
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
    if (!diff.empty()) {
        throw Error(TW_RESULT_VERSION_MISMATCH,
                    "the tickwire library does not match tickwire.h (" + diff + "); is a stale libtickwire on the library path?");
    }
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

/** The library's default host config (tw_host_config_init_default). Edit, then pass to Host. */
inline tw_host_config default_config() {
    tw_host_config c;
    tw_result r = tw_host_config_init_default(&c);
    if (TW_FAILED(r)) {
        throw Error::last(r);
    }
    return c;
}

/** A perfect simulated link (tw_link_sim_config_init_default). Edit, then pass to set_link_sim. */
inline tw_link_sim_config default_link_sim() {
    tw_link_sim_config c;
    tw_result r = tw_link_sim_config_init_default(&c);
    if (TW_FAILED(r)) {
        throw Error::last(r);
    }
    return c;
}

/** The peer address of a TW_EVENT_KIND_CONNECTED event (a view into the event). */
inline std::string_view connected_address(const tw_event &ev) noexcept {
    const char *a = ev.data.connected.address;
    std::size_t n = 0;
    while (n < sizeof ev.data.connected.address && a[n] != '\0') {
        ++n;
    }
    return std::string_view(a, n);
}

/** The message of a TW_EVENT_KIND_FATAL event (a view into the event). */
inline std::string_view fatal_message(const tw_event &ev) noexcept {
    const char *m = ev.data.fatal.message;
    std::size_t n = 0;
    while (n < sizeof ev.data.fatal.message && m[n] != '\0') {
        ++n;
    }
    return std::string_view(m, n);
}

/**
 * One tickwire host: a UDP socket, its network thread and its connections. Unique
 * ownership: move-only; the destructor destroys the host (joining the network thread,
 * at most 1 second). A moved-from Host holds nothing; calls on it return
 * TW_RESULT_NULL_ARGUMENT (or throw, for setup calls).
 */
class Host {
public:
    /** Binds to bind_address ("0.0.0.0:7777", "127.0.0.1:0", "[::]:0") and starts the network thread. */
    explicit Host(const char *bind_address, const tw_host_config &config = default_config()) {
        static const bool abi_ok = (check_abi(), true);
        (void)abi_ok;
        tw_result r = tw_host_create(&config, bind_address, &host_);
        if (TW_FAILED(r)) {
            throw Error::last(r);
        }
    }
    explicit Host(const std::string &bind_address, const tw_host_config &config = default_config())
        : Host(bind_address.c_str(), config) {}

    /** Takes ownership of a handle from tw_host_create. */
    static Host adopt(tw_host *raw) noexcept { return Host(raw); }

    ~Host() { reset(); }
    Host(Host &&other) noexcept : host_(std::exchange(other.host_, nullptr)) {}
    Host &operator=(Host &&other) noexcept {
        if (this != &other) {
            reset();
            host_ = std::exchange(other.host_, nullptr);
        }
        return *this;
    }
    Host(const Host &) = delete;
    Host &operator=(const Host &) = delete;

    /** The handle, for calls to the C API. Still owned by this Host. */
    tw_host *get() const noexcept { return host_; }
    /** Gives up ownership: the caller must tw_host_destroy the result. */
    tw_host *release() noexcept { return std::exchange(host_, nullptr); }
    /** Destroys the host now (no-op if empty). */
    void reset() noexcept {
        tw_host_destroy(host_);
        host_ = nullptr;
    }
    explicit operator bool() const noexcept { return host_ != nullptr; }

    /** Starts connecting ("127.0.0.1:7777"); returns the peer id. A CONNECTED or DISCONNECTED event follows. */
    std::uint32_t connect(const char *address) {
        std::uint32_t peer = 0;
        tw_result r = tw_host_connect(host_, address, &peer);
        if (TW_FAILED(r)) {
            throw Error::last(r);
        }
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
        if (TW_FAILED(r)) {
            throw Error::last(r);
        }
        return out;
    }

    tw_result disconnect(std::uint32_t peer) noexcept { return tw_host_disconnect(host_, peer); }
    tw_result peer_stats(std::uint32_t peer, tw_peer_stats &out) noexcept { return tw_host_peer_stats(host_, peer, &out); }
    tw_result stats(tw_host_stats &out) noexcept { return tw_host_get_stats(host_, &out); }

    /** Turns the link simulator of one direction on (tests, development). Throws on a bad config. */
    void set_link_sim(tw_direction direction, const tw_link_sim_config &config) {
        tw_result r = tw_host_set_link_sim(host_, direction, &config);
        if (TW_FAILED(r)) {
            throw Error::last(r);
        }
    }
    void clear_link_sim(tw_direction direction) {
        tw_result r = tw_host_set_link_sim(host_, direction, nullptr);
        if (TW_FAILED(r)) {
            throw Error::last(r);
        }
    }

    /** The bound address, with the real port ("127.0.0.1:40123"). */
    std::string local_address() const {
        char buf[64];
        std::size_t len = 0;
        tw_result r = tw_host_local_address(host_, buf, sizeof buf, &len);
        if (TW_FAILED(r)) {
            throw Error::last(r);
        }
        return std::string(buf, len > 0 ? len - 1 : 0);
    }

private:
    explicit Host(tw_host *raw) noexcept : host_(raw) {}
    tw_host *host_ = nullptr;
};

}  // namespace tickwire

#endif  // TICKWIRE_HPP
