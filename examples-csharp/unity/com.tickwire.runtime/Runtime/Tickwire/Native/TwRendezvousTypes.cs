// Blittable mirrors of the rendezvous enums and structs in include/tickwire.h: a P2P
// session's path to each remote player (tw_path, the PATH_CHANGED member of the event
// union), why a rendezvous refused a ticket (tw_rendezvous_refusal, the
// RENDEZVOUS_REFUSED member), and the rendezvous service's figures
// (tw_rendezvous_stats). TwNetworkStats' Path and PathAddress are in TwNetworkStats.cs.
//
// The rules of TwTypes.cs hold: field order, types and sizes follow the C header; the
// test program checks every size and offset against the C compiler's, and every
// enumerator against the header's; no constants or static fields inside a mirrored
// struct.

using System.Runtime.InteropServices;

namespace Tickwire
{
    /// <summary>
    /// tw_path: how a remote player's datagrams go in a P2P session met through a rendezvous
    /// (TwSessionEventPath.Path, TwNetworkStats.Path).
    /// </summary>
    public enum TwPath : uint
    {
        /// <summary>No rendezvous, or the rendezvous has not introduced the peer yet.</summary>
        None = 0,
        /// <summary>Straight to the peer (the address is the peer's).</summary>
        Direct = 1,
        /// <summary>
        /// Through the rendezvous's relay (the address is the relay's): the relay forwards what it
        /// cannot read (sealed end to end with the players' secret).
        /// </summary>
        Relayed = 2,
    }

    /// <summary>
    /// tw_rendezvous_refusal: why a rendezvous refused this side's ticket
    /// (TwSessionEventRefusal.Reason). Advisory: a refusal is not authenticated, and the
    /// session keeps trying.
    /// </summary>
    public enum TwRendezvousRefusal : uint
    {
        /// <summary>The ticket does not open with the rendezvous's key, does not name it, or its proof fails.</summary>
        BadTicket = 1,
        /// <summary>The ticket has expired.</summary>
        Expired = 2,
        /// <summary>The ticket's user data holds no match claim (TwMatchClaim).</summary>
        NoMatch = 3,
        /// <summary>Another player (another client id) holds this slot of the match.</summary>
        SlotTaken = 4,
        /// <summary>The match's time is up, or the service holds all the matches it may.</summary>
        Closed = 5,
        /// <summary>The ticket's player count disagrees with the match's other tickets.</summary>
        Mismatch = 6,
    }

    /// <summary>
    /// tw_session_event_path: PathChanged, the path to remote player Player changed: Relayed as
    /// soon as the rendezvous introduces its peer, Direct once a connectivity check succeeds
    /// (again when its NAT maps it anew), back to Relayed when a direct path stops answering
    /// for 1 s. The match goes on through every change.
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwSessionEventPath
    {
        /// <summary>The remote player.</summary>
        public uint Player;
        /// <summary>How its datagrams go now.</summary>
        public TwPath Path;
        /// <summary>Where they go: the peer's address (Direct) or the relay's (Relayed), NUL-terminated UTF-8.</summary>
        public fixed byte Address[64];

        /// <summary>Address as a string (allocates).</summary>
        public string GetAddress()
        {
            fixed (byte* p = Address)
            {
                return TwText.FromUtf8(p, 64);
            }
        }
    }

    /// <summary>tw_session_event_refusal: RendezvousRefused, the rendezvous refused this side's ticket.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwSessionEventRefusal
    {
        /// <summary>Why.</summary>
        public TwRendezvousRefusal Reason;
        /// <summary>Must be ignored.</summary>
        public uint Reserved0;
    }

    /// <summary>
    /// tw_rendezvous_stats (80 bytes): what a rendezvous service has done
    /// (TwRendezvous.GetStats), at most 100 ms old.
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TwRendezvousStats
    {
        /// <summary>Matches held now.</summary>
        public ulong Matches;
        /// <summary>Their members now.</summary>
        public ulong Members;
        /// <summary>Matches made since the start.</summary>
        public ulong MatchesMade;
        /// <summary>Tickets taken (a member in, refreshed or moved).</summary>
        public ulong Hellos;
        /// <summary>Datagrams relayed.</summary>
        public ulong RelayedDatagrams;
        /// <summary>Bytes relayed (the peers' packets, past the relay's header).</summary>
        public ulong RelayedBytes;
        /// <summary>Tickets refused (forged, expired, for a taken slot, a closed match).</summary>
        public ulong Refused;
        /// <summary>Relay datagrams over their match's byte budget, dropped.</summary>
        public ulong OverBudget;
        /// <summary>Datagrams from addresses that are no member's (relaying without a ticket), dropped.</summary>
        public ulong Strangers;
        /// <summary>Datagrams that do not read, replays, datagrams to nobody, tickets over the opening budget: dropped.</summary>
        public ulong Dropped;
    }
}
