// Stand-ins for the few Steamworks.NET types and members the package's Steam sample
// (Samples~/Steam/SteamCarrier.cs) uses, with Steamworks.NET's namespace, names, field
// order and signatures as published (com.rlabrecque.steamworks.net): compiled as an
// assembly of that name, so that scripts/unity-package-check.sh compiles the sample as
// Unity does with Steamworks.NET installed. Test-only: never shipped in the package, and
// nothing here talks to Steam (every call throws or returns nothing).
#pragma warning disable 0169, 0649, 0414
using System;
using System.Runtime.InteropServices;

namespace Steamworks
{
    public enum EResult
    {
        k_EResultNone = 0,
        k_EResultOK = 1,
        k_EResultFail = 2,
        k_EResultNoConnection = 3,
    }

    public enum ESteamNetworkingIdentityType
    {
        k_ESteamNetworkingIdentityType_Invalid = 0,
        k_ESteamNetworkingIdentityType_SteamID = 16,
    }

    public static class Constants
    {
        public const int k_nSteamNetworkingSend_Unreliable = 0;
        public const int k_nSteamNetworkingSend_NoNagle = 1;
        public const int k_nSteamNetworkingSend_UnreliableNoNagle = k_nSteamNetworkingSend_Unreliable | k_nSteamNetworkingSend_NoNagle;
        public const int k_nSteamNetworkingSend_Reliable = 8;
    }

    [Serializable]
    [StructLayout(LayoutKind.Sequential, Pack = 4)]
    public struct CSteamID
    {
        public ulong m_SteamID;

        public CSteamID(ulong ulSteamID)
        {
            m_SteamID = ulSteamID;
        }

        public static explicit operator ulong(CSteamID that)
        {
            return that.m_SteamID;
        }

        public static explicit operator CSteamID(ulong value)
        {
            return new CSteamID(value);
        }
    }

    [Serializable]
    public struct HSteamNetConnection
    {
        public uint m_HSteamNetConnection;
    }

    [Serializable]
    public struct SteamNetworkingMicroseconds
    {
        public long m_SteamNetworkingMicroseconds;

        public static explicit operator long(SteamNetworkingMicroseconds that)
        {
            return that.m_SteamNetworkingMicroseconds;
        }

        public static explicit operator SteamNetworkingMicroseconds(long value)
        {
            SteamNetworkingMicroseconds v;
            v.m_SteamNetworkingMicroseconds = value;
            return v;
        }
    }

    [Serializable]
    [StructLayout(LayoutKind.Sequential, Pack = 1)]
    public struct SteamNetworkingIdentity
    {
        public ESteamNetworkingIdentityType m_eType;
        private int m_cbSize;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 32)]
        private uint[] m_reserved;

        public void SetSteamID(CSteamID steamID)
        {
            SetSteamID64(steamID.m_SteamID);
        }

        public CSteamID GetSteamID()
        {
            return new CSteamID(GetSteamID64());
        }

        public void SetSteamID64(ulong steamID)
        {
            throw new NotImplementedException("Steamworks.NET stand-in");
        }

        public ulong GetSteamID64()
        {
            throw new NotImplementedException("Steamworks.NET stand-in");
        }
    }

    [Serializable]
    [StructLayout(LayoutKind.Sequential)]
    public struct SteamNetworkingMessage_t
    {
        public IntPtr m_pData;
        public int m_cbSize;
        public HSteamNetConnection m_conn;
        public SteamNetworkingIdentity m_identityPeer;
        public long m_nConnUserData;
        public SteamNetworkingMicroseconds m_usecTimeReceived;
        public long m_nMessageNumber;
        internal IntPtr m_pfnFreeData;
        internal IntPtr m_pfnRelease;
        public int m_nChannel;
        public int m_nFlags;
        public long m_nUserData;

        public static void Release(IntPtr pointer)
        {
            throw new NotImplementedException("Steamworks.NET stand-in");
        }

        public static SteamNetworkingMessage_t FromIntPtr(IntPtr pointer)
        {
            return (SteamNetworkingMessage_t)Marshal.PtrToStructure(pointer, typeof(SteamNetworkingMessage_t));
        }
    }

    [StructLayout(LayoutKind.Sequential, Pack = 4)]
    public struct SteamNetworkingMessagesSessionRequest_t
    {
        public const int k_iCallback = 1251;
        public SteamNetworkingIdentity m_identityRemote;
    }

    public static class SteamNetworkingMessages
    {
        public static EResult SendMessageToUser(ref SteamNetworkingIdentity identityRemote, IntPtr pubData, uint cubData, int nSendFlags,
                                                int nRemoteChannel)
        {
            throw new NotImplementedException("Steamworks.NET stand-in");
        }

        public static int ReceiveMessagesOnChannel(int nLocalChannel, IntPtr[] ppOutMessages, int nMaxMessages)
        {
            throw new NotImplementedException("Steamworks.NET stand-in");
        }

        public static bool AcceptSessionWithUser(ref SteamNetworkingIdentity identityRemote)
        {
            throw new NotImplementedException("Steamworks.NET stand-in");
        }

        public static bool CloseSessionWithUser(ref SteamNetworkingIdentity identityRemote)
        {
            throw new NotImplementedException("Steamworks.NET stand-in");
        }
    }

    public static class SteamNetworkingUtils
    {
        public static SteamNetworkingMicroseconds GetLocalTimestamp()
        {
            throw new NotImplementedException("Steamworks.NET stand-in");
        }
    }

    public sealed class Callback<T> : IDisposable
    {
        public delegate void DispatchDelegate(T param);

        private DispatchDelegate m_Func;

        public static Callback<T> Create(DispatchDelegate func)
        {
            Callback<T> c = new Callback<T>();
            c.m_Func = func;
            return c;
        }

        public void Unregister()
        {
            m_Func = null;
        }

        public void Dispose()
        {
            Unregister();
        }
    }
}
