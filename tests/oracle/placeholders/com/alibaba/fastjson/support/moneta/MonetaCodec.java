/* Placeholder: fastjson's codec for org.javamoney.moneta.Money (never used: no Money values here). */
package com.alibaba.fastjson.support.moneta;

import com.alibaba.fastjson.parser.DefaultJSONParser;
import com.alibaba.fastjson.parser.deserializer.ObjectDeserializer;
import com.alibaba.fastjson.serializer.JSONSerializer;
import com.alibaba.fastjson.serializer.ObjectSerializer;
import java.lang.reflect.Type;

public class MonetaCodec implements ObjectSerializer, ObjectDeserializer {
    public static final MonetaCodec instance = new MonetaCodec();

    public void write(JSONSerializer serializer, Object object, Object fieldName, Type fieldType, int features) {
        throw new UnsupportedOperationException("moneta placeholder");
    }

    public <T> T deserialze(DefaultJSONParser parser, Type type, Object fieldName) {
        throw new UnsupportedOperationException("moneta placeholder");
    }

    public int getFastMatchToken() {
        return 0;
    }
}
