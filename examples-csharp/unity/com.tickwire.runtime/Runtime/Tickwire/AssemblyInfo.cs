using System.Runtime.CompilerServices;

// The test program (bindings/csharp/Tests) reaches the raw layer (TwNative), and
// declares the native test hooks with TwNative.Lib.
[assembly: InternalsVisibleTo("Tickwire.Tests")]
