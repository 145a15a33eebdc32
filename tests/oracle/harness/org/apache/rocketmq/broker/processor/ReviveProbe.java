/*
 * Harness class in PopReviveService's package (its ConsumeReviveObj is package-private): runs the real
 * PopReviveService.consumeReviveMessage over one revive queue and returns what it paired, without
 * mergeAndRevive (which writes). The broker holder given decides where the scan starts (its
 * ConsumerOffsetManager's CID_RMQ_SYS_REVIVE_GROUP offset).
 */
package org.apache.rocketmq.broker.processor;

import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.store.pop.PopCheckPoint;

public final class ReviveProbe {
    public final long oldOffset;
    public final long endTime;
    /** The checkpoints in mergeAndRevive's order (genSortList: by reviveOffset), acks merged into bitMap. */
    public final List<PopCheckPoint> sortList;

    private ReviveProbe(long oldOffset, long endTime, List<PopCheckPoint> sortList) {
        this.oldOffset = oldOffset;
        this.endTime = endTime;
        this.sortList = sortList;
    }

    public static ReviveProbe scan(BrokerController broker, String reviveTopic, int queueId) {
        PopReviveService service = new PopReviveService(broker, reviveTopic, queueId);
        service.setShouldRunPopRevive(true);
        PopReviveService.ConsumeReviveObj obj = new PopReviveService.ConsumeReviveObj();
        service.consumeReviveMessage(obj);
        return new ReviveProbe(obj.oldOffset, obj.endTime, new ArrayList<>(obj.genSortList()));
    }
}
