using System;
using System.Runtime.InteropServices;
using Tickwire.Native;

namespace Tickwire
{
    /// <summary>
    /// A rendezvous service in this process (tw_rendezvous): P2P peers behind NATs register
    /// with it using tickets minted with its key (<see cref="GenerateTicket"/>), learn the
    /// other peers' candidate addresses, and have their packets relayed (sealed end to end
    /// with the players' secret, which the service never has) until a direct path answers.
    /// It runs on a thread of its own until disposed. A studio runs it on a public address
    /// (in a server process of its own, or as the `tickwire rendezvous` program); tests and
    /// tools run it on loopback.
    ///
    /// The constructor throws <see cref="TickwireException"/> with the code and the
    /// library's message; GetStats returns a <see cref="TwResult"/> and never allocates. Any
    /// call after Dispose throws ObjectDisposedException. Not thread-safe: call it from one
    /// thread at a time. The service's thread never calls managed code.
    /// </summary>
    public sealed unsafe class TwRendezvous : IDisposable
    {
        private readonly RendezvousHandle _handle;
        private string _localAddress;

        // Live services, so that DisposeAll can release them before a Unity domain reload.
        private static readonly LiveHandles s_live = new LiveHandles();
        private readonly WeakReference _liveToken;

        /// <summary>
        /// Starts the service on bindAddress (IP and port, "0.0.0.0:7780"; port 0 picks one),
        /// which must be the address the tickets name (the address players reach it at), with
        /// the tickets' key (TwConstants.KeySize bytes, TwSecurity.GenerateKey; copied) for the
        /// game's protocolId (TwHostConfig.ProtocolId). Each match may relay relayBytesPerSec
        /// bytes a second (0: 32768) for matchSecs seconds from its first ticket (0: 7200).
        /// Throws TickwireException: InvalidArgument (an unparsable address, a key that is not
        /// 32 bytes or is all zero), AddressInUse, Io.
        /// </summary>
        public TwRendezvous(string bindAddress, ReadOnlySpan<byte> key, uint protocolId, uint relayBytesPerSec = 0,
                            uint matchSecs = 0)
        {
            TwLibrary.EnsureCompatible();
            byte[] address = TwText.ToUtf8Z(bindAddress);
            IntPtr raw = IntPtr.Zero;
            TwResult r;
            fixed (byte* a = address)
            fixed (byte* k = &MemoryMarshal.GetReference(key))
            {
                r = TwNative.tw_rendezvous_create(a, k, (UIntPtr)key.Length, protocolId, relayBytesPerSec, matchSecs, &raw);
            }
            if (r != TwResult.Ok)
            {
                throw TickwireException.FromLastError(r);
            }
            _handle = new RendezvousHandle(raw);
            _liveToken = s_live.Add(_handle);
        }

        /// <summary>The owned native handle (for code that calls the C API itself).</summary>
        public RendezvousHandle Handle
        {
            get { return _handle; }
        }

        /// <summary>True once Dispose (or DisposeAll) has stopped the service.</summary>
        public bool IsDisposed
        {
            get { return _handle.IsClosed; }
        }

        /// <summary>
        /// The address the service is bound to, for example "127.0.0.1:40123" (the real port
        /// when bound to port 0): what tickets name when players reach it there. Computed once.
        /// </summary>
        public string LocalAddress
        {
            get
            {
                ThrowIfDisposed();
                if (_localAddress == null)
                {
                    byte* buf = stackalloc byte[64];
                    UIntPtr len;
                    TwResult r = TwNative.tw_rendezvous_local_address(_handle, buf, (UIntPtr)64, &len);
                    if (r != TwResult.Ok)
                    {
                        throw TickwireException.FromLastError(r);
                    }
                    _localAddress = TwText.FromUtf8(buf, 64);
                }
                return _localAddress;
            }
        }

        /// <summary>
        /// What the service has done (matches, members, tickets taken and refused, datagrams and
        /// bytes relayed, drops), at most 100 ms old. Ok, or an error (Busy, Panic). Never
        /// allocates.
        /// </summary>
        public TwResult GetStats(out TwRendezvousStats stats)
        {
            ThrowIfDisposed();
            stats = default(TwRendezvousStats);
            fixed (TwRendezvousStats* p = &stats)
            {
                return TwNative.tw_rendezvous_get_stats(_handle, p);
            }
        }

        /// <summary>Stops the service's thread and closes its socket. Safe to call twice.</summary>
        public void Dispose()
        {
            if (_handle == null)
            {
                return;
            }
            _handle.Dispose();
            s_live.Remove(_liveToken);
        }

        /// <summary>
        /// Mints a rendezvous ticket as a game backend does: a connect token
        /// (TwConnectToken.Generate) made with the rendezvous's key (TwConstants.KeySize bytes)
        /// for the game's protocolId, naming the rendezvous's address (rendezvousAddress, as
        /// players reach it), whose user data is the match claim of player slot of match matchId
        /// (players in all, 2..=8; TwMatchClaim) followed by gameData (at most
        /// TwConstants.ConnectTokenUserDataSize - TwConstants.MatchClaimSize bytes of the game's
        /// own). clientId: the player's id in the backend, one per slot. The ticket can be used
        /// for expireSeconds from now. Hand it to the player over your own secure channel, with
        /// the match's players' secret; the player passes it to TwSession.SetRendezvous. Throws
        /// TickwireException (InvalidArgument naming the argument).
        /// </summary>
        public static byte[] GenerateTicket(ReadOnlySpan<byte> key, uint protocolId, ulong clientId, string rendezvousAddress,
                                            ulong matchId, uint slot, uint players, uint expireSeconds,
                                            ReadOnlySpan<byte> gameData = default(ReadOnlySpan<byte>))
        {
            byte[] userData = new byte[TwConstants.MatchClaimSize + gameData.Length];
            TwMatchClaim.Write(matchId, slot, players, userData);
            gameData.CopyTo(new Span<byte>(userData, TwConstants.MatchClaimSize, gameData.Length));
            return TwConnectToken.Generate(key, protocolId, clientId, rendezvousAddress, expireSeconds, 0, userData);
        }

        /// <summary>
        /// Stops every live rendezvous service of this process. For Unity: the package calls it
        /// before a domain reload and when play mode ends.
        /// </summary>
        public static void DisposeAll()
        {
            s_live.DisposeAll();
        }

        /// <summary>How many services are alive (created and not yet disposed or collected).</summary>
        public static int LiveCount
        {
            get { return s_live.CountOpen(); }
        }

        private void ThrowIfDisposed()
        {
            if (_handle.IsClosed)
            {
                throw new ObjectDisposedException("TwRendezvous", "this tickwire rendezvous has been disposed");
            }
        }
    }

    /// <summary>
    /// The match claim a rendezvous ticket's user data starts with (tw_match_claim_write):
    /// the match (the backend's name for it), the player's slot and the match's number of
    /// players, in TwConstants.MatchClaimSize bytes. TwRendezvous.GenerateTicket writes it
    /// for you; a backend that mints tokens itself puts it first in their user data.
    /// </summary>
    public static unsafe class TwMatchClaim
    {
        /// <summary>
        /// Writes the claim of player slot (below players) in match matchId (players: 2..=8)
        /// into the first TwConstants.MatchClaimSize bytes of destination. Throws
        /// TickwireException (InvalidArgument: players out of range, slot not below it,
        /// destination too short; NullArgument: destination empty).
        /// </summary>
        public static void Write(ulong matchId, uint slot, uint players, Span<byte> destination)
        {
            TwLibrary.EnsureCompatible();
            TwResult r;
            fixed (byte* p = &MemoryMarshal.GetReference(destination))
            {
                r = TwNative.tw_match_claim_write(matchId, slot, players, p, (UIntPtr)destination.Length);
            }
            if (r != TwResult.Ok)
            {
                throw TickwireException.FromLastError(r);
            }
        }

        /// <summary>As above, into a new array of TwConstants.MatchClaimSize bytes.</summary>
        public static byte[] Create(ulong matchId, uint slot, uint players)
        {
            byte[] claim = new byte[TwConstants.MatchClaimSize];
            Write(matchId, slot, players, claim);
            return claim;
        }
    }
}
