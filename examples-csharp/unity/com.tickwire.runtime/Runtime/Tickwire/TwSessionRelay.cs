using System;
using Tickwire.Native;

namespace Tickwire
{
    // The TwSession calls of the relay topology (RELAY_SERVER, RELAY_CLIENT): naming the
    // server (setup, throws), asking for a new snapshot after a desync, and a server's
    // per-player figures and identities (per frame: TwResult out, no allocation).
    //
    // Everything else of a relay match goes through the calls every mode shares: a client
    // pushes its input as TwConstants.LocalPlayer every due tick, advances and runs the
    // requests (RESTORE when it joins, then SAVE / LOAD / ADVANCE as in rollback); a server
    // advances with no input of its own and answers DUMP_STATE for joining clients.
    //
    // Not Unity Relay: tickwire's relay is its own authoritative server with client-side
    // prediction, a TwSession you run yourself (a dedicated server build or the host's
    // scene) that simulates the game and sends every client the canonical inputs. It is
    // not Unity Relay, the Unity Gaming Services product that forwards packets between
    // players through Unity's servers, and needs neither that service nor Unity Transport.
    public sealed unsafe partial class TwSession
    {
        /// <summary>
        /// RELAY_CLIENT, before Start: the relay server to join, as an IP address and port
        /// ("192.0.2.7:7777", "[2001:db8::7]:7777") or a host name and port
        /// ("relay.example.com:7777", as TwHost.Connect). Start connects; a name is looked up
        /// off this thread and neither call waits for it. A name that gives no address comes
        /// as a ServerLost event with TwDisconnectReason.ResolveFailed. Throws
        /// TickwireException: InvalidArgument for an address that is none (or port 0, or an
        /// unspecified IP, or IPv6 from an IPv4 bind: use an empty bind address),
        /// QueueFull, InvalidState in another mode or after Start.
        /// </summary>
        public void SetServer(string address)
        {
            ThrowIfDisposed();
            byte[] text = TwText.ToUtf8Z(address);
            fixed (byte* a = text)
            {
                ThrowIfFailed(TwNative.tw_session_set_server(_handle, a));
            }
        }

        /// <summary>
        /// RELAY_CLIENT: drops the predicted timeline and asks the server for a new snapshot on
        /// the same connection, for example after a Desync event: Resyncing follows, then Joined
        /// with a RESTORE request of the server's state and a catch-up, as when joining.
        /// Ok; InvalidState in another mode, before Start or before the client has joined.
        /// </summary>
        public TwResult RequestSnapshot()
        {
            ThrowIfDisposed();
            return TwNative.tw_session_request_snapshot(_handle);
        }

        /// <summary>
        /// RELAY_SERVER: removes player on purpose, for good. Its client sees ServerLost with
        /// TwDisconnectReason.KickedByEngine and does not reconnect; here PlayerKicked
        /// (TwKickReason.Engine, TwSessionEventRelay.Code = reasonCode) then PlayerSlotFreed
        /// follow, and the slot takes the next player at once. reasonCode is the engine's own and
        /// stays on the server. Ok; InvalidArgument for a player beyond NumPlayers; InvalidState
        /// in another mode, before Start, or when the slot is free (the message says which).
        /// </summary>
        public TwResult KickPlayer(uint player, uint reasonCode)
        {
            ThrowIfDisposed();
            return TwNative.tw_session_kick_player(_handle, player, reasonCode);
        }

        /// <summary>
        /// RELAY_SERVER: the figures of player (its jitter buffer's depth and counters, its
        /// round trip). Ok; Empty when the slot has no connected player now (stats zeroed);
        /// InvalidArgument for a player beyond NumPlayers; InvalidState in another mode.
        /// </summary>
        public TwResult GetPlayerStats(uint player, out TwRelayPlayerStats stats)
        {
            ThrowIfDisposed();
            stats = default(TwRelayPlayerStats);
            fixed (TwRelayPlayerStats* p = &stats)
            {
                return TwNative.tw_session_player_stats(_handle, player, p);
            }
        }

        /// <summary>
        /// RELAY_SERVER: true when player's slot has a connected player and its figures were
        /// written; false when it has none (or on an error: GetPlayerStats gives the code).
        /// </summary>
        public bool TryGetPlayerStats(uint player, out TwRelayPlayerStats stats)
        {
            return GetPlayerStats(player, out stats) == TwResult.Ok;
        }

        /// <summary>
        /// RELAY_SERVER: what the connection of player proved (tw_session_player_identity): for a
        /// client admitted by a connect token, the token's ClientId and UserData as the game's
        /// backend minted them (the client cannot change them); else the class of the secret it
        /// proved. The identity stays with the slot while it waits for a dropped player (a
        /// player that comes back must prove the same credential). Per frame: allocates
        /// nothing (TwPlayerIdentity.CopyUserData reads the data into a buffer you keep).
        /// Ok; Empty when the slot is free (identity zeroed); InvalidArgument for a player
        /// beyond NumPlayers; InvalidState in another mode.
        /// </summary>
        public TwResult GetPlayerIdentity(uint player, out TwPlayerIdentity identity)
        {
            ThrowIfDisposed();
            identity = default(TwPlayerIdentity);
            fixed (TwPlayerIdentity* p = &identity)
            {
                return TwNative.tw_session_player_identity(_handle, player, p);
            }
        }

        /// <summary>
        /// RELAY_SERVER: true when player's slot is taken and its identity was written; false
        /// when it is free (or on an error: GetPlayerIdentity gives the code).
        /// </summary>
        public bool TryGetPlayerIdentity(uint player, out TwPlayerIdentity identity)
        {
            return GetPlayerIdentity(player, out identity) == TwResult.Ok;
        }
    }
}
