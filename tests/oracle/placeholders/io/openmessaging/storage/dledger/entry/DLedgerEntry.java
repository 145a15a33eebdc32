/* Placeholder for DLedger's entry: only BODY_OFFSET is named (by the DLedger branches, never taken here). */
package io.openmessaging.storage.dledger.entry;

public final class DLedgerEntry {
    public static final int BODY_OFFSET = 48;
}
