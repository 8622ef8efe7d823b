/* core.p4 for the softswitch: the declarations every P4-16 program sees,
 * written from the P4-16 language specification (section "P4 core library"). */
#ifndef _CORE_P4_
#define _CORE_P4_

/* Built-in errors, in the order BMv2 numbers them. */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

extern packet_in {
    /* Fixed-size header. */
    void extract<T>(out T hdr);
    /* Header with one varbit field of the given size. */
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    T lookahead<T>();
    void advance(in bit<32> sizeInBits);
    bit<32> length();
}

extern packet_out {
    void emit<T>(in T hdr);
}

/* Parser-only: reject with `toSignal` when `check` is false. */
extern void verify(in bool check, in error toSignal);

@noWarn("unused")
action NoAction() {}

match_kind {
    exact,
    ternary,
    lpm
}

#endif
