using System.Runtime.CompilerServices;

// The test program reaches the raw layer (TwNative) and the test-only debug calls.
[assembly: InternalsVisibleTo("Tickwire.Tests")]
