// Blittable mirrors of the relay topology's own enums and structs in include/tickwire.h:
// the server's jitter-buffer policies, the client's input-delay mode, the kick and
// reject reasons, the relay members of the session event union
// (tw_session_event_relay, tw_session_event_rejected) and tw_relay_player_stats.
//
// The rules of TwTypes.cs hold: field order, types and sizes follow the C header; the
// test program checks every size and offset against the C compiler's; no constants or
// static fields inside a mirrored struct (properties are fine: they are not fields).

using System;
using System.Runtime.InteropServices;

namespace Tickwire
{
    /// <summary>tw_underflow_policy: what a relay server uses for a tick whose input from a client has not arrived.</summary>
    public enum TwUnderflowPolicy : uint
    {
        /// <summary>Repeat the client's last input (held buttons stay held).</summary>
        RepeatLast = 0,
        /// <summary>An all-zero input.</summary>
        Empty = 1,
    }

    /// <summary>tw_late_policy: what a relay server tick does when a client's next input is late.</summary>
    public enum TwLatePolicy : uint
    {
        /// <summary>Use none of that client's inputs this tick and consume it a tick later: nothing is lost.</summary>
        Delay = 0,
        /// <summary>Substitute the missing input and drop the real one when it comes (a misprediction per late input).</summary>
        Substitute = 1,
        /// <summary>
        /// The default: substitute while at most 2 inputs in a row are missing, then delay (when
        /// the whole stream is late, after a latency step or a hitch, waiting keeps the inputs).
        /// From a client that sends every tick (its uplink loses packets) up to 16 in a row are
        /// substituted, as a burst of loss, unless the server waited for it within 60 ticks.
        /// </summary>
        Adaptive = 2,
    }

    /// <summary>tw_input_delay_mode: where a relay client's base input delay comes from.</summary>
    public enum TwInputDelayMode : uint
    {
        /// <summary>Always TwSessionConfig.InputDelay ticks.</summary>
        Fixed = 0,
        /// <summary>InputDelayRttPercent of the round trip, in whole ticks, at most InputDelayMax; re-evaluated every second.</summary>
        FromRtt = 1,
    }

    /// <summary>tw_kick_reason: why a relay server removed a player (PlayerKicked).</summary>
    public enum TwKickReason : uint
    {
        /// <summary>Its input queue passed JitterHardCap (far ahead, or flooding).</summary>
        Overflow = 1,
        /// <summary>No input for JitterMaxStarvedTicks ticks in a row (it cannot keep up).</summary>
        Starved = 2,
        /// <summary>No longer raised: a player behind StepHistory is sent a snapshot instead (PlayerCatchingUp). Reserved.</summary>
        FellBehind = 3,
        /// <summary>It kept asking for new snapshots far faster than it could be served (16 at once, then one a second).</summary>
        ResyncFlood = 4,
        /// <summary>The engine kicked it (TwSession.KickPlayer; TwSessionEventRelay.Code is its reason code). Final: PlayerSlotFreed follows.</summary>
        Engine = 5,
        /// <summary>It kept falling out of the step history although the catch-up snapshots reached it (it never acknowledges its steps): more than two at once, then more than one per 30 s.</summary>
        CatchUpFlood = 6,
    }

    /// <summary>tw_reject_reason: why a connection was refused (ConnectionRejected).</summary>
    public enum TwRejectReason : uint
    {
        /// <summary>P2P and SPECTATOR: nobody registered the connection's address.</summary>
        UnexpectedAddress = 0,
        /// <summary>RELAY_SERVER: its Hello did not decode.</summary>
        Malformed = 1,
        /// <summary>RELAY_SERVER: a client for another game (another input size or player count).</summary>
        WrongGame = 2,
        /// <summary>RELAY_SERVER: a token no slot has (forged, or its slot was freed).</summary>
        BadToken = 3,
        /// <summary>RELAY_SERVER: every slot is taken.</summary>
        Full = 4,
        /// <summary>RELAY_SERVER: no Hello within HelloTimeoutMs.</summary>
        NoHello = 5,
        /// <summary>
        /// RELAY_SERVER: a slot's session token on a connection that did not prove the credential
        /// that first claimed the slot (another connect token's client id, or another secret's
        /// class): a leaked token is worthless to another player. The client is told AuthFailed.
        /// </summary>
        WrongCredential = 6,
    }

    /// <summary>
    /// tw_session_event_relay: PlayerJoined, PlayerReconnected, PlayerLeft, PlayerSlotFreed,
    /// PlayerKicked, Joined, Reconnecting, Resyncing, ServerLost.
    /// <para>
    /// Not Unity Relay: tickwire's relay is its own authoritative server with client-side
    /// prediction, a TwSession you run yourself (a dedicated server build or the host's
    /// scene) that simulates the game and sends every client the canonical inputs. It is
    /// not Unity Relay, the Unity Gaming Services product that forwards packets between
    /// players through Unity's servers, and needs neither that service nor Unity Transport.
    /// </para>
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwSessionEventRelay
    {
        /// <summary>The player slot concerned (Joined: this client's), or TwConstants.NoPlayer.</summary>
        public uint Player;
        /// <summary>
        /// The first tick with (joins) or without (departures) the player; Resyncing: the
        /// authoritative tick dropped; otherwise the next tick.
        /// </summary>
        public uint Tick;
        /// <summary>
        /// PlayerLeft (server), Reconnecting, ServerLost: a TwDisconnectReason; PlayerKicked: a
        /// TwKickReason; else 0. Read it through DisconnectReason or KickReason.
        /// </summary>
        public uint Reason;
        /// <summary>Joined: 1 if this is the client's old slot, back after a dropped connection; else 0.</summary>
        public uint Reconnect;
        /// <summary>
        /// PlayerKicked with TwKickReason.Engine: the reasonCode given to TwSession.KickPlayer (it
        /// stays on the server: the client sees only TwDisconnectReason.KickedByEngine); else 0.
        /// </summary>
        public uint Code;
        /// <summary>
        /// PlayerJoined, PlayerReconnected (server): what the player's connection proved; a
        /// returning player proved the same as the one that first claimed the slot. Else Open (0).
        /// </summary>
        public TwCredential Credential;
        /// <summary>
        /// PlayerJoined, PlayerReconnected with TwCredential.ConnectToken: the token's client id,
        /// as the game's backend minted it (its user data: TwSession.GetPlayerIdentity). Else 0.
        /// </summary>
        public ulong ClientId;

        /// <summary>Reason as a TwDisconnectReason (PlayerLeft on the server, Reconnecting, ServerLost).</summary>
        public TwDisconnectReason DisconnectReason
        {
            get { return (TwDisconnectReason)Reason; }
        }

        /// <summary>Reason as a TwKickReason (PlayerKicked).</summary>
        public TwKickReason KickReason
        {
            get { return (TwKickReason)Reason; }
        }

        /// <summary>Joined: back in its old slot after a dropped connection.</summary>
        public bool IsReconnect
        {
            get { return Reconnect != 0; }
        }
    }

    /// <summary>tw_session_event_rejected: ConnectionRejected.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwSessionEventRejected
    {
        public TwRejectReason Reason;
    }

    /// <summary>
    /// tw_player_identity (304 bytes): what a relay player's connection proved, from
    /// TwSession.GetPlayerIdentity. For a connect token: the client id and user data the game's
    /// backend sealed into it (the client cannot change them), for example a ranked player's
    /// account id. A plain copy: keep it as long as you like.
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwPlayerIdentity
    {
        /// <summary>What the player's connection proved.</summary>
        public TwCredential Credential;
        /// <summary>Must be ignored.</summary>
        public uint Reserved0;
        /// <summary>TwCredential.ConnectToken: the token's client id (the player's id in the game's backend); else 0.</summary>
        public ulong ClientId;
        /// <summary>
        /// TwCredential.ConnectToken: the token's user data, zero-padded to
        /// TwConstants.ConnectTokenUserDataSize bytes (the token does not record a shorter
        /// length: give the data its own length or terminator); else all zero.
        /// </summary>
        public fixed byte UserData[256];
        /// <summary>Must be ignored.</summary>
        public fixed byte Reserved[32];

        /// <summary>
        /// Copies the user data into destination (at most its length, up to 256 bytes) and
        /// returns the number of bytes copied. Allocates nothing: a per-frame reader passes a
        /// buffer it keeps, or a stackalloc span.
        /// </summary>
        public int CopyUserData(Span<byte> destination)
        {
            int n = Math.Min(destination.Length, 256);
            fixed (byte* p = UserData)
            {
                new ReadOnlySpan<byte>(p, n).CopyTo(destination);
            }
            return n;
        }

        /// <summary>The user data as a new 256-byte array. Allocates: call it on join, not per frame.</summary>
        public byte[] GetUserData()
        {
            byte[] copy = new byte[256];
            CopyUserData(copy);
            return copy;
        }
    }

    /// <summary>
    /// tw_relay_player_stats (128 bytes): a relay server's figures for one player, from
    /// TwSession.GetPlayerStats. New figures take space from Reserved.
    /// <para>
    /// Not Unity Relay: tickwire's relay is its own authoritative server with client-side
    /// prediction, a TwSession you run yourself (a dedicated server build or the host's
    /// scene) that simulates the game and sends every client the canonical inputs. It is
    /// not Unity Relay, the Unity Gaming Services product that forwards packets between
    /// players through Unity's servers, and needs neither that service nor Unity Transport.
    /// </para>
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwRelayPlayerStats
    {
        /// <summary>The player slot.</summary>
        public uint Player;
        /// <summary>Its connection (for TwSession.GetPeerStats).</summary>
        public uint Peer;
        /// <summary>The first tick whose canonical step included it, since its latest (re)join.</summary>
        public uint JoinedTick;
        /// <summary>Inputs waiting in its jitter buffer now.</summary>
        public uint BufferDepth;
        /// <summary>Ticks run with this player since its latest (re)join.</summary>
        public ulong Ticks;
        /// <summary>Ticks that used exactly its next input, on time.</summary>
        public ulong NormalSteps;
        /// <summary>Ticks that used none of its inputs: nothing had arrived (underflow).</summary>
        public ulong EmptySteps;
        /// <summary>Ticks whose input was lost for good and substituted.</summary>
        public ulong SubstitutedSteps;
        /// <summary>Ticks that merged several of its inputs (its queue ran past JitterMaxDepth).</summary>
        public ulong Merges;
        /// <summary>Inputs folded into those merges.</summary>
        public ulong MergedInputs;
        /// <summary>Inputs whose first copy arrived after their tick.</summary>
        public ulong LateInputs;
        /// <summary>Redundant copies received (inputs are resent until acknowledged).</summary>
        public ulong Duplicates;
        /// <summary>The transport's smoothed round trip to it, in microseconds (0 if unknown).</summary>
        public double RttUs;
        /// <summary>Bytes of updates (steps and sync feedback) sent to it since its latest (re)join.</summary>
        public ulong UpdateBytes;
        /// <summary>Steps sent to it again after their resend timeout.</summary>
        public ulong StepsResent;
        /// <summary>Redundant copies of steps sent to it (as many as its measured loss asks for).</summary>
        public ulong StepCopies;
        /// <summary>Redundant copies left out under BandwidthCap.</summary>
        public ulong CopiesCapped;
        public fixed ulong Reserved[1];
    }
}
