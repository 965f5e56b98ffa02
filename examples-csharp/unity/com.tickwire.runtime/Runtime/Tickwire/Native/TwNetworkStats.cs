// Blittable mirror of tw_network_stats in include/tickwire.h: a P2P session's net-overlay
// figures for one remote player (TwSession.GetNetworkStats, GGPO's
// ggpo_get_network_stats), with the path to it under a rendezvous.
//
// The rules of TwTypes.cs hold: field order, types and sizes follow the C header; the
// test program checks every size and offset against the C compiler's; no constants or
// static fields inside a mirrored struct.

using System.Runtime.InteropServices;

namespace Tickwire
{
    /// <summary>
    /// tw_network_stats: what a net overlay shows for one remote player of a P2P session,
    /// as GGPO's GGPONetworkStats. GGPO's ping (ms) is RttUs (µs); kbps_sent is KbpsSent;
    /// send_queue_len is SendQueue; recv_queue_len (never filled by GGPO) is RecvQueue;
    /// local_frames_behind is -LocalFrameAdvantage; remote_frames_behind is
    /// -RemoteFrameAdvantage. Frame advantages are in ticks, positive when the side that
    /// measured is ahead.
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct TwNetworkStats
    {
        /// <summary>The remote player asked about.</summary>
        public uint Player;
        /// <summary>The connection it plays behind (for TwSession.GetPeerStats).</summary>
        public uint Peer;
        /// <summary>Smoothed round-trip time to the peer, in microseconds.</summary>
        public double RttUs;
        /// <summary>Fraction of recent packets to the peer never acknowledged, in [0, 1].</summary>
        public double Loss;
        /// <summary>Kilobits per second sent to the peer, over the last second.</summary>
        public double KbpsSent;
        /// <summary>Kilobits per second received from the peer.</summary>
        public double KbpsReceived;
        /// <summary>Ticks this side is ahead of the peer, measured here on the latest tick.</summary>
        public float LocalFrameAdvantage;
        /// <summary>Ticks the peer is ahead of this side, as the peer measured it.</summary>
        public float RemoteFrameAdvantage;
        /// <summary>What the time sync acts on: (local - remote) / 2 over the last 32 ticks.</summary>
        public float FramesAhead;
        /// <summary>Ticks of this side's local inputs the peer has not acknowledged yet.</summary>
        public uint SendQueue;
        /// <summary>Ticks of the peer's inputs received for ticks not run yet.</summary>
        public uint RecvQueue;
        /// <summary>Ticks run on a prediction of the peer's inputs: the pending rollback.</summary>
        public uint PredictedTicks;
        /// <summary>Time since the peer was last heard from, in microseconds.</summary>
        public ulong SilentUs;
        /// <summary>
        /// How this player's datagrams go under a rendezvous (TwSession.SetRendezvous): Direct or
        /// Relayed; None without one. Took the first 4 of the reserved bytes.
        /// </summary>
        public TwPath Path;
        /// <summary>
        /// Where they go: the peer's address (Direct) or the relay's (Relayed), NUL-terminated
        /// UTF-8; empty with None. GetPathAddress reads it as a string.
        /// </summary>
        public fixed byte PathAddress[48];
        /// <summary>Zero.</summary>
        public uint Reserved;

        /// <summary>PathAddress as a string (allocates: not every frame).</summary>
        public string GetPathAddress()
        {
            fixed (byte* p = PathAddress)
            {
                return TwText.FromUtf8(p, 48);
            }
        }
    }
}
